#!/usr/bin/env python3
"""Writes a GLB of a field of rocks placed by EXT_mesh_gpu_instancing, for measuring how
`canopy render` traces a file that places one mesh many times (two levels, or one tree over
every copy with --flatten).

    tools/instanced-glb.py OUT.glb [INSTANCES] [RINGS]

One bumped UV sphere of RINGS latitude bands (4 RINGS (RINGS - 1) triangles; default 16: 960)
placed INSTANCES times (default 10000) with seeded random turns, scales from 0.5 to 1.5 and
positions in a cube whose volume grows with the count."""
import json
import math
import random
import struct
import sys


def rock(rings):
    segments = 2 * rings
    positions = [(0.0, 1.0, 0.0)]
    for ring in range(1, rings):
        theta = math.pi * ring / rings
        for s in range(segments):
            phi = 2 * math.pi * s / segments
            p = (math.sin(theta) * math.cos(phi), math.cos(theta), math.sin(theta) * math.sin(phi))
            bump = 1 + 0.2 * math.sin(2.3 * p[0] + 0.7) * math.cos(3.1 * p[1]) + 0.1 * math.sin(1.7 * p[2])
            positions.append(tuple(c * bump for c in p))
    positions.append((0.0, -1.0, 0.0))
    bottom = len(positions) - 1

    def at(ring, s):
        return 1 + (ring - 1) * segments + s % segments

    triangles = []
    for s in range(segments):
        triangles.append((0, at(1, s + 1), at(1, s)))
        triangles.append((bottom, at(rings - 1, s), at(rings - 1, s + 1)))
    for ring in range(1, rings - 1):
        for s in range(segments):
            a, b = at(ring, s), at(ring, s + 1)
            c, d = at(ring + 1, s + 1), at(ring + 1, s)
            triangles += [(a, b, c), (a, c, d)]
    return positions, triangles


def main():
    out = sys.argv[1]
    instances = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rings = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    positions, triangles = rock(rings)
    rng = random.Random(7)
    side = 4.0 * instances ** (1 / 3)
    translations, rotations, scales = [], [], []
    for _ in range(instances):
        translations.append([rng.uniform(0, side) for _ in range(3)])
        axis = [rng.uniform(-1, 1) for _ in range(3)]
        norm = math.sqrt(sum(a * a for a in axis)) or 1.0
        angle = rng.uniform(0, 2 * math.pi)
        rotations.append([a / norm * math.sin(angle / 2) for a in axis] + [math.cos(angle / 2)])
        scales.append([rng.uniform(0.5, 1.5)] * 3)
    chunks = [
        b"".join(struct.pack("<3f", *p) for p in positions),
        b"".join(struct.pack("<3I", *t) for t in triangles),
        b"".join(struct.pack("<3f", *t) for t in translations),
        b"".join(struct.pack("<4f", *r) for r in rotations),
        b"".join(struct.pack("<3f", *s) for s in scales),
    ]
    views, offset = [], 0
    for chunk in chunks:
        views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(chunk)})
        offset += len(chunk)
    lo = [min(p[k] for p in positions) for k in range(3)]
    hi = [max(p[k] for p in positions) for k in range(3)]
    document = {
        "asset": {"version": "2.0"},
        "extensionsUsed": ["EXT_mesh_gpu_instancing"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "extensions": {"EXT_mesh_gpu_instancing": {
            "attributes": {"TRANSLATION": 2, "ROTATION": 3, "SCALE": 4}}}}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": offset}],
        "bufferViews": views,
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": len(positions), "type": "VEC3",
             "min": lo, "max": hi},
            {"bufferView": 1, "componentType": 5125, "count": 3 * len(triangles), "type": "SCALAR"},
            {"bufferView": 2, "componentType": 5126, "count": instances, "type": "VEC3"},
            {"bufferView": 3, "componentType": 5126, "count": instances, "type": "VEC4"},
            {"bufferView": 4, "componentType": 5126, "count": instances, "type": "VEC3"},
        ],
    }
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % 4)
    binary = b"".join(chunks)
    binary += b"\0" * (-len(binary) % 4)
    with open(out, "wb") as f:
        f.write(b"glTF" + struct.pack("<II", 2, 12 + 8 + len(text) + 8 + len(binary)))
        f.write(struct.pack("<I", len(text)) + b"JSON" + text)
        f.write(struct.pack("<I", len(binary)) + b"BIN\0" + binary)


if __name__ == "__main__":
    main()
