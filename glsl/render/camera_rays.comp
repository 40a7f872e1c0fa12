#version 460
// Primary rays of a pinhole camera, one per pixel in row-major order from the top-left:
// through the pixel's centre, direction = forward + x * right + y * up with x, y in [-1, 1]
// (right and up scaled by the field of view and aspect ratio on the host). Unnormalised
// directions are fine: hits are found for t in (0, inf).
#include "../common/prelude.glsl"
#include "../common/ray.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t rays_address; // out: Ray per pixel
    vec3 origin;
    uint width;
    vec3 forward;
    uint height;
    vec3 right;
    float pad0;
    vec3 up;
    float pad1;
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.width * pc.height) {
        return;
    }
    float x = (float(i % pc.width) + 0.5) / float(pc.width) * 2.0 - 1.0;
    float y = 1.0 - (float(i / pc.width) + 0.5) / float(pc.height) * 2.0;
    Rays(pc.rays_address).v[i] = Ray(pc.origin, 0.0, pc.forward + x * pc.right + y * pc.up, INF);
}
