"""ResNet-34 (torchvision) for 32x32 images.

``stem="cifar"`` (default) replaces the ImageNet stem (7x7 stride-2 convolution and a max-pool,
which shrink a 32x32 image to 8x8 before the first residual block) with a 3x3 stride-1
convolution and no pooling, the usual adaptation to CIFAR-10. ``stem="imagenet"`` keeps
torchvision's stem: the network the classic SageMaker CIFAR-10 comparison tuned, whose early
downsampling explains its ~74% validation accuracy; it needs 16x fewer FLOPs per image.
"""

from __future__ import annotations

from torch import nn
from torchvision.models import resnet34


def build_model(classes: int = 10, stem: str = "cifar") -> nn.Module:
    if stem not in ("cifar", "imagenet"):
        raise ValueError(f"stem must be cifar or imagenet, got {stem!r}")
    model = resnet34(weights=None, num_classes=classes)
    if stem == "cifar":
        model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = nn.Identity()
    return model
