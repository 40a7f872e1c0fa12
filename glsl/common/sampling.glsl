// Deterministic sampling shared by the renderer's kernels: an integer hash and what is made
// from it, the same bits on every device (src/geom/view.rs and src/render/cpu.rs mirror it).
#ifndef CANOPY_SAMPLING
#define CANOPY_SAMPLING

// A 32-bit integer hash (Chris Wellons' "lowbias32").
uint sample_hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

// The top 24 bits of a hash as a float in [0, 1), exactly.
float unit_float(uint hash) {
    return float(hash >> 8) * (1.0 / 16777216.0);
}

// A direction about unit normal n, cosine-weighted (Malley's method: a point of the unit disc
// lifted onto the hemisphere), from two numbers in [0, 1); the basis is Duff et al.'s
// ("Building an Orthonormal Basis, Revisited", JCGT 2017).
vec3 cosine_direction(vec3 n, float r1, float r2) {
    float sign_z = n.z >= 0.0 ? 1.0 : -1.0;
    float a = -1.0 / (sign_z + n.z);
    float b = n.x * n.y * a;
    vec3 t = vec3(1.0 + sign_z * n.x * n.x * a, sign_z * b, -sign_z * n.x);
    vec3 s = vec3(b, sign_z + n.y * n.y * a, -n.y);
    float phi = 6.28318531 * r1; // 2 pi
    float r = sqrt(r2);
    return r * cos(phi) * t + r * sin(phi) * s + sqrt(max(1.0 - r2, 0.0)) * n;
}

#endif
