"""Build the starting /app/photos folder (run once at image build time)."""
import os

OUT = "/app/photos"


def blob(seed, size=4096):
    x = seed
    data = bytearray()
    for _ in range(size):
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        data.append((x >> 16) & 0xFF)
    return bytes(data)


# file name -> content seed; equal seeds mean byte-identical files
LAYOUT = {
    "IMG_1001.jpg": 11,
    "IMG_1001 (1).jpg": 11,
    "IMG_1002.jpg": 12,
    "IMG_1002-edited.jpg": 13,
    "IMG_1003.jpg": 14,
    "copy of IMG_1003.jpg": 14,
    "IMG_1003 (2).jpg": 14,
    "Beach.jpg": 21,
    "beach_backup.jpg": 21,
    "cat.png": 31,
    "cat_v2.png": 32,
    "dog.png": 33,
    "zz_dog.png": 33,
    "screenshot-2024-01-09.png": 41,
    "screenshot-2024-01-10.png": 42,
    "wallpaper.jpg": 51,
    "Wallpaper-HD.jpg": 51,
    "family.jpg": 61,
}

os.makedirs(OUT, exist_ok=True)
for name, seed in LAYOUT.items():
    with open(os.path.join(OUT, name), "wb") as fh:
        fh.write(blob(seed))
