"""efficientnet: EfficientNetV2-S image classification on ImageNet (ImageFolder layout)."""
