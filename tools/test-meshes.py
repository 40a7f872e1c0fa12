#!/usr/bin/env python3
"""Writes the procedural test meshes of tests/data/meshes (canopy's own, under its licence):

  gear.obj     a machined part: a 48-tooth gear with a bore, extruded; flat faces meeting at
               sharp edges, triangles and quads, no normals (the CAD case)
  torus.obj    a smooth torus of 22 x 22 quads with a normal per vertex (968 triangles)
  capsule.obj  a capsule of quads with triangle fans at its poles, normals per vertex, CRLF
               line ends, groups, materials and smoothing groups, and 720 obsolete `fo`
               faces (a marker object) that readers skip

Run from the repository's root: tools/test-meshes.py (it prints each file's triangle count
and bounding-box extent, which tests/loaders.rs checks).
"""

import math
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "meshes")


def fmt(x):
    return f"{x:.6f}".rstrip("0").rstrip(".") if x != 0 else "0"


def write(name, header, vertices, normals, faces, line_end="\n", extra=()):
    """Writes an OBJ; faces are lists of 1-based vertex indices (with normals when given)."""
    lines = [f"# {name}: {header}", "# made by tools/test-meshes.py (canopy's own test data)"]
    lines += ["v " + " ".join(fmt(c) for c in v) for v in vertices]
    lines += ["vn " + " ".join(fmt(c) for c in n) for n in normals]
    for face in faces:
        if isinstance(face, str):
            lines.append(face)
        elif normals:
            lines.append("f " + " ".join(f"{i}//{i}" for i in face))
        else:
            lines.append("f " + " ".join(str(i) for i in face))
    lines += list(extra)
    with open(os.path.join(OUT, name), "w", newline="") as f:
        f.write(line_end.join(lines) + line_end)
    triangles = sum(len(f) - 2 for f in faces if not isinstance(f, str))
    extent = [max(v[k] for v in vertices) - min(v[k] for v in vertices) for k in range(3)]
    print(f"{name}: {len(vertices)} vertices, {triangles} triangles, extent "
          f"[{', '.join(f'{e:.4f}' for e in extent)}]")


def gear():
    teeth, inner_radius, root, tip, height, rings = 48, 0.8, 2.0, 2.3, 0.6, 4
    # The outer profile: per tooth, root - rise - tip - fall (4 points); the bore has as many.
    outer = []
    for t in range(teeth):
        for k, (r, a) in enumerate([(root, 0.0), (tip, 0.2), (tip, 0.5), (root, 0.7)]):
            angle = 2 * math.pi * (t + a) / teeth
            outer.append((r * math.cos(angle), r * math.sin(angle)))
    n = len(outer)
    bore = [(inner_radius * math.cos(2 * math.pi * i / n), inner_radius * math.sin(2 * math.pi * i / n))
            for i in range(n)]
    vertices, faces = [], []
    # Rings of the outer and bore walls, bottom to top.
    def ring(profile, z):
        first = len(vertices) + 1
        vertices.extend((x, y, z) for x, y in profile)
        return first
    levels = [height * r / rings for r in range(rings + 1)]
    outer_rings = [ring(outer, z) for z in levels]
    bore_rings = [ring(bore, z) for z in levels]
    for rings_of, outward in ((outer_rings, True), (bore_rings, False)):
        for a, b in zip(rings_of, rings_of[1:]):
            for i in range(n):
                j = (i + 1) % n
                quad = [a + i, a + j, b + j, b + i]
                faces.append(quad if outward else quad[::-1])
    # The top and bottom: the annulus between the bore and the profile, as triangles.
    for (o, i), up in (((outer_rings[-1], bore_rings[-1]), True), ((outer_rings[0], bore_rings[0]), False)):
        for k in range(n):
            l = (k + 1) % n
            for tri in ([o + k, o + l, i + l], [o + k, i + l, i + k]):
                faces.append(tri if up else tri[::-1])
    write("gear.obj", "a 48-tooth gear with a bore: flat faces, sharp edges", vertices, [], faces)


def torus():
    major, minor, u_steps, v_steps = 1.0, 0.35, 22, 22
    vertices, normals, faces = [], [], []
    for i in range(u_steps):
        u = 2 * math.pi * i / u_steps
        for j in range(v_steps):
            v = 2 * math.pi * j / v_steps
            n = (math.cos(u) * math.cos(v), math.sin(u) * math.cos(v), math.sin(v))
            c = (major * math.cos(u), major * math.sin(u), 0.0)
            vertices.append(tuple(c[k] + minor * n[k] for k in range(3)))
            normals.append(n)
    at = lambda i, j: (i % u_steps) * v_steps + (j % v_steps) + 1
    for i in range(u_steps):
        for j in range(v_steps):
            faces.append([at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)])
    write("torus.obj", "a torus of quads with vertex normals", vertices, normals, faces)


def capsule():
    radius, half, around, cap_rings, body_rings = 0.3, 0.5, 48, 12, 40
    vertices, normals, faces = [], [], []
    # Rings from the bottom pole's neighbour to the top pole's, then the two poles.
    profile = []
    for r in range(1, cap_rings + 1):  # bottom cap, from near the pole to the equator
        a = -math.pi / 2 + (math.pi / 2) * r / cap_rings
        profile.append((radius * math.cos(a), -half + radius * math.sin(a), math.cos(a), math.sin(a)))
    for r in range(1, body_rings):
        profile.append((radius, -half + 2 * half * r / body_rings, 1.0, 0.0))
    for r in range(0, cap_rings):  # top cap, from the equator to near the pole
        a = (math.pi / 2) * r / cap_rings
        profile.append((radius * math.cos(a), half + radius * math.sin(a), math.cos(a), math.sin(a)))
    for rr, y, nr, ny in profile:
        for k in range(around):
            t = 2 * math.pi * k / around
            vertices.append((rr * math.cos(t), y, rr * math.sin(t)))
            normals.append((nr * math.cos(t), ny, nr * math.sin(t)))
    rings = len(profile)
    at = lambda r, k: r * around + (k % around) + 1
    faces.append("g body")
    faces.append("usemtl skin")
    faces.append("s 1")
    for r in range(rings - 1):
        for k in range(around):
            faces.append([at(r, k), at(r, k + 1), at(r + 1, k + 1), at(r + 1, k)][::-1])
    bottom, top = len(vertices) + 1, len(vertices) + 2
    vertices += [(0.0, -half - radius, 0.0), (0.0, half + radius, 0.0)]
    normals += [(0.0, -1.0, 0.0), (0.0, 1.0, 0.0)]
    faces.append("g caps")
    faces.append("usemtl nails")
    for k in range(around):
        faces.append([bottom, at(0, k + 1), at(0, k)][::-1])
        faces.append([top, at(rings - 1, k), at(rings - 1, k + 1)][::-1])
    # A marker object of obsolete `fo` faces (720 quads over the body's vertices): skipped.
    markers = ["g markers", "usemtl marker"]
    for m in range(720):
        r, k = m % (rings - 1), m // (rings - 1)
        markers.append("fo " + " ".join(f"{i}//{i}" for i in
                                        [at(r, k), at(r + 1, k), at(r + 1, k + 1), at(r, k + 1)]))
    header_faces = ["mtllib capsule.mtl"] + faces
    write("capsule.obj", "a capsule of quads and fans, normals, CRLF, groups, `fo` markers",
          vertices, normals, header_faces, line_end="\r\n", extra=markers)


if __name__ == "__main__":
    gear()
    torus()
    capsule()
