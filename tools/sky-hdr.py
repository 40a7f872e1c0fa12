#!/usr/bin/env python3
"""Writes tests/data/environment/sky.hdr: a small equirectangular sky made by formula (no
photograph), for the tests and the README's example. A blue sky brightening to a pale
horizon, the glow of a low warm sun, soft clouds of a hashed noise, and a brown-green ground. Radiance RGBE,
uncompressed scanlines. Run from the repository's root; the output is deterministic."""
import math
import struct

WIDTH, HEIGHT = 256, 128
SUN = (math.radians(35.0), math.radians(25.0))  # azimuth from -z towards +x, elevation


def direction(x, y):
    u = (x + 0.5) / WIDTH
    v = (y + 0.5) / HEIGHT
    theta = v * math.pi  # from straight up
    phi = (u - 0.5) * 2.0 * math.pi  # atan2(x, -z)
    s = math.sin(theta)
    return (s * math.sin(phi), math.cos(theta), -s * math.cos(phi))


def noise(x, y):
    n = 0.0
    for octave in range(4):
        f = 2 ** octave
        n += math.sin(x * 0.11 * f + math.sin(y * 0.07 * f) * 3.0) * math.cos(y * 0.13 * f) / f
    return n


def radiance(x, y):
    d = direction(x, y)
    sun = (math.sin(SUN[0]) * math.cos(SUN[1]), math.sin(SUN[1]), -math.cos(SUN[0]) * math.cos(SUN[1]))
    cos_sun = sum(a * b for a, b in zip(d, sun))
    if d[1] < 0.0:
        return (0.18, 0.16, 0.11)
    up = d[1]
    sky = (0.55 - 0.35 * up, 0.7 - 0.25 * up, 1.0)
    cloud = max(0.0, noise(x, y) - 0.4) * min(1.0, up * 4.0)
    sky = tuple(c * (1.0 - cloud) + 1.1 * cloud for c in sky)
    # A broad glow rather than a sun's disc: a small, very bright disc would need importance
    # sampling to light surfaces without fireflies (canopy samples the sky by cosine).
    glow = max(0.0, cos_sun) ** 16 * 3.0
    return tuple(c + glow * w for c, w in zip(sky, (1.0, 0.9, 0.75)))


def rgbe(c):
    m = max(c)
    if m < 1e-32:
        return bytes(4)
    mantissa, exponent = math.frexp(m)
    scale = mantissa * 256.0 / m
    return bytes([int(c[0] * scale), int(c[1] * scale), int(c[2] * scale), exponent + 128])


with open("tests/data/environment/sky.hdr", "wb") as f:
    f.write(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n")
    f.write(f"-Y {HEIGHT} +X {WIDTH}\n".encode())
    for y in range(HEIGHT):
        for x in range(WIDTH):
            f.write(rgbe(radiance(x, y)))
