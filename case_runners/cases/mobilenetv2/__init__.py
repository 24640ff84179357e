"""mobilenetv2: MobileNetV2 image classification on ImageNet (ImageFolder layout)."""
