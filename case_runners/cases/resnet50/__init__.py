"""resnet50: ResNet-50 v1.5 image classification on ImageNet (ImageFolder layout)."""
