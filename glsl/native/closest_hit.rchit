#version 460
// The driver's accepted hit as canopy's Hit: distance, triangle (the primitive index of the
// one geometry) and the barycentric weights of its second and third vertices.
#extension GL_EXT_ray_tracing : require
#define CANOPY_FOREIGN_STAGE
#include "../common/ray.glsl"

layout(location = 0) rayPayloadInEXT Hit payload;
hitAttributeEXT vec2 barycentrics;

void main() {
    payload = Hit(gl_HitTEXT, gl_PrimitiveID, barycentrics.x, barycentrics.y);
}
