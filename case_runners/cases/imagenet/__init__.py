"""ImageNet support shared by the image classification cases (not a case: it has no config.yaml nor case.py).

- data.py: the format check of an ImageFolder tree (stdlib only; each case's data.py re-exports it)
- transforms.py: the recipes' Pillow transforms: random resized crop and flip, eval resize and crop, RandAugment
- dataset.py: ImageFolder read with Pillow, synthetic images, the datasets a case's params ask for
- recipe.py: mixup/cutmix with soft targets, EMA of the weights, optimizers, learning-rate schedules (torch)
- classifier.py: ImageClassifierCase, the TrainingCase of an ImageNet classifier; a case adds its model
- inference.py: the inference pipeline's data, top-1 metric, export and forward passes of the ImageNet classifiers
"""
