#version 460
// Per point of a cloud, from its k nearest neighbours (glsl/pointkd/knn.comp's answer, the
// point itself among them): the PCA normal, the unit eigenvector of the smallest eigenvalue of
// the neighbours' covariance (cyclic Jacobi rotations on the symmetric 3x3 matrix, a fixed
// number of sweeps), and the density rho = k / r_k^2 with r_k the k-th neighbour's distance
// (seed 000 §6). Fewer than three neighbours give a zero normal; neighbours all at one place
// give an infinite density. src/points/cpu.rs computes the same in double precision.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address; // vec3 per point
    uint64_t ids_address;       // k neighbour indices per point (MISS past the last)
    uint64_t distances_address; // k squared distances per point
    uint64_t out_address;       // out: vec4 per point: normal, density
    uint count;
    uint k;
} pc;

const uint MISS = 0xffffffffu;
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };
const uint SWEEPS = 8;

// One Jacobi rotation zeroing a[p][q] of the symmetric matrix a, accumulated into v.
void rotate(inout mat3 a, inout mat3 v, int p, int q) {
    if (a[p][q] == 0.0) {
        return;
    }
    float theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
    float t = sign(theta) / (abs(theta) + sqrt(theta * theta + 1.0));
    if (theta == 0.0) {
        t = 1.0;
    }
    float c = inversesqrt(t * t + 1.0);
    float s = t * c;
    mat3 j = mat3(1.0);
    j[p][p] = c;
    j[q][q] = c;
    // GLSL indexes [column][row]: J(p, q) = s, J(q, p) = -s.
    j[q][p] = s;
    j[p][q] = -s;
    a = transpose(j) * a * j;
    v = v * j;
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.count) {
        return;
    }
    Vec3s positions = Vec3s(pc.positions_address);
    U32s ids = U32s(pc.ids_address);
    uint base = i * pc.k;
    uint m = 0;
    vec3 centre = vec3(0.0);
    for (uint j = 0; j < pc.k; ++j) {
        uint id = ids.v[base + j];
        if (id != MISS) {
            centre += positions.v[id];
            m += 1;
        }
    }
    vec4 result = vec4(0.0);
    if (m > 0) {
        centre /= float(m);
        mat3 cov = mat3(0.0);
        for (uint j = 0; j < m; ++j) {
            vec3 d = positions.v[ids.v[base + j]] - centre;
            cov += outerProduct(d, d);
        }
        cov /= float(m);
        float r2 = F32s(pc.distances_address).v[base + m - 1];
        float density = r2 > 0.0 ? float(m) / r2 : INF;
        vec3 normal = vec3(0.0);
        if (m >= 3) {
            mat3 v = mat3(1.0);
            for (uint sweep = 0; sweep < SWEEPS; ++sweep) {
                rotate(cov, v, 0, 1);
                rotate(cov, v, 0, 2);
                rotate(cov, v, 1, 2);
            }
            int smallest = cov[0][0] <= cov[1][1] ? (cov[0][0] <= cov[2][2] ? 0 : 2) : (cov[1][1] <= cov[2][2] ? 1 : 2);
            normal = normalize(v[smallest]);
        }
        result = vec4(normal, density);
    }
    Vec4s(pc.out_address).v[i] = result;
}
