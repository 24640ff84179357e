"""detr: DETR (ResNet-50 backbone) object detection on COCO 2017, mAP from pycocotools."""
