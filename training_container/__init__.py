"""The canonical workload: ResNet-34 on CIFAR-10 trained by SGD. Imports nothing from tuner/."""
