"""Task environments without a container engine: Dockerfile -> cached root filesystem template."""

from agentmill.images.build import Image, ImageBuilder, ImageBuildError

__all__ = ["Image", "ImageBuilder", "ImageBuildError"]
