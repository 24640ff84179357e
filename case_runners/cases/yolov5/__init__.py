"""yolov5: FlagPerf's YOLOv5-L inference case on COCO val2017, mAP by pycocotools (an inference-only case:
inference/, no training config)."""
