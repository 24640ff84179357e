"""vit: ViT-B/16 image classification on ImageNet (ImageFolder layout)."""
