#!/usr/bin/env python3
"""How often canopy's oriented normals agree in sign with a mesh's own vertex normals, beside
Open3D's Hoppe orientation (`orient_normals_consistent_tangent_plane`) on the same points.

For each mesh: its vertices, merged by position, become the point cloud; each point's reference
normal is the area-weighted sum of its faces' normals (the mesh's winding). canopy orients with
`canopy points normals -k K`; Open3D estimates PCA normals from the same K nearest and orients
them with its minimum spanning tree over the same K. Agreement is the share of points whose
normal has a positive dot product with the reference. An orientation's overall sign is a
convention (canopy turns closed surfaces outwards; Hoppe's tree starts from an arbitrary sign),
so both the raw share and the share up to one global flip are printed. A mesh wound inwards
(negative signed volume) is marked: its own normals point in, so outward normals disagree.

Usage: tools/orientation-vs-open3d.py CANOPY_BINARY MESH... [--k 16]
Needs numpy and open3d (`pip install open3d`). Writes only to a temporary folder.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import open3d as o3d


def read_ply_tristrips(path):
    """Vertices and triangles of a binary PLY whose faces are `tristrips` (igea.ply), which
    Open3D does not read: strips of `int` indices, -1 restarting a strip."""
    data = Path(path).read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode("ascii").splitlines()
    if "format binary_little_endian 1.0" not in header or "property float z" not in header:
        return None
    counts = {line.split()[1]: int(line.split()[2]) for line in header if line.startswith("element")}
    if "tristrips" not in counts or header.count("property float x") != 1:
        return None
    vertex_count = counts["vertex"]
    vertices = np.frombuffer(data, dtype="<f4", count=vertex_count * 3, offset=end).reshape(-1, 3)
    at = end + vertex_count * 12
    triangles = []
    for _ in range(counts["tristrips"]):
        length = int(np.frombuffer(data, dtype="<i4", count=1, offset=at)[0])
        strip = np.frombuffer(data, dtype="<i4", count=length, offset=at + 4)
        at += 4 + 4 * length
        run = []
        for index in strip:
            if index < 0:
                run = []
                continue
            run.append(int(index))
            if len(run) >= 3:
                a, b, c = run[-3:]
                # Every other triangle of a strip is wound the other way.
                triangles.append((a, b, c) if len(run) % 2 == 1 else (b, a, c))
    return vertices.astype(np.float64), np.array(triangles, dtype=np.int64)


def read_obj(path):
    """Vertices and triangles of an OBJ, polygons split into fans (Open3D's reader drops
    quads, so it is not used for OBJ)."""
    vertices, triangles = [], []
    for line in open(path, errors="replace"):
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "v":
            vertices.append([float(x) for x in fields[1:4]])
        elif fields[0] == "f":
            corners = [int(c.split("/")[0]) for c in fields[1:]]
            corners = [c - 1 if c > 0 else len(vertices) + c for c in corners]
            triangles += [(corners[0], corners[i], corners[i + 1]) for i in range(1, len(corners) - 1)]
    return np.array(vertices, dtype=np.float64), np.array(triangles, dtype=np.int64)


def cloud_with_reference_normals(path):
    """The mesh's vertices merged by position, each with its reference normal, and whether the
    mesh is wound inwards (negative signed volume)."""
    if str(path).endswith(".obj"):
        vertices, faces = read_obj(path)
    else:
        mesh = o3d.io.read_triangle_mesh(str(path))
        vertices = np.asarray(mesh.vertices, dtype=np.float64)
        faces = np.asarray(mesh.triangles, dtype=np.int64)
        if len(faces) == 0:
            vertices, faces = read_ply_tristrips(path) or (vertices, faces)
    if len(vertices) == 0 or len(faces) == 0:
        sys.exit(f"{path}: no triangles read")
    # Degenerate triangles (a repeated index, as strips have) add nothing.
    faces = faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])]
    points, merged = np.unique(vertices.astype(np.float32), axis=0, return_inverse=True)
    merged = merged.reshape(-1)
    corners = vertices[faces]
    face_normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    volume = np.sum(np.einsum("ij,ij->i", corners[:, 0], np.cross(corners[:, 1], corners[:, 2]))) / 6
    reference = np.zeros((len(points), 3))
    for corner in range(3):
        np.add.at(reference, merged[faces[:, corner]], face_normals)
    used = np.linalg.norm(reference, axis=1) > 0
    return points[used], reference[used], volume < 0


def write_ply(path, points):
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {len(points)}\n"
        "property float x\nproperty float y\nproperty float z\nend_header\n"
    )
    with open(path, "wb") as f:
        f.write(header.encode())
        f.write(np.ascontiguousarray(points, dtype="<f4").tobytes())


def read_canopy_ply(path, count):
    data = Path(path).read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    rows = np.frombuffer(data[end:], dtype="<f4").reshape(count, 7)
    return rows[:, :3], rows[:, 3:6]


def agreement(normals, reference):
    share = float(np.mean(np.sum(normals * reference, axis=1) > 0))
    return share, max(share, 1.0 - share)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("canopy")
    parser.add_argument("meshes", nargs="+")
    parser.add_argument("--k", type=int, default=16)
    args = parser.parse_args()
    print(f"open3d {o3d.__version__}, k = {args.k}")
    print("| mesh | points | canopy | canopy up to a flip | Open3D | Open3D up to a flip | canopy s | Open3D s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for mesh in args.meshes:
            points, reference, inwards = cloud_with_reference_normals(mesh)
            cloud_path = Path(scratch) / "cloud.ply"
            out_path = Path(scratch) / "normals.ply"
            write_ply(cloud_path, points)
            start = time.perf_counter()
            subprocess.run(
                [args.canopy, "points", "normals", str(cloud_path), "-k", str(args.k),
                 "-o", str(out_path), "--validation", "off"],
                check=True, stdout=subprocess.DEVNULL,
            )
            canopy_s = time.perf_counter() - start
            positions, canopy_normals = read_canopy_ply(out_path, len(points))
            if not np.array_equal(positions, points):
                sys.exit(f"{mesh}: canopy's output is not in the input's order")
            cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points.astype(np.float64)))
            start = time.perf_counter()
            cloud.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(args.k))
            cloud.orient_normals_consistent_tangent_plane(args.k)
            open3d_s = time.perf_counter() - start
            open3d_normals = np.asarray(cloud.normals)
            c, cf = agreement(canopy_normals, reference)
            o, of = agreement(open3d_normals, reference)
            name = Path(mesh).name + (" (wound inwards)" if inwards else "")
            print(f"| {name} | {len(points):,} | {c:.4f} | {cf:.4f} | {o:.4f} | {of:.4f} "
                  f"| {canopy_s:.2f} | {open3d_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
