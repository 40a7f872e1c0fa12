// Shared by the starting-radius kernels (seed 000 Appendix A, Alg. 7): a node's centre, and
// whether it has points.
#ifndef CANOPY_POINTKD_RADIUS
#define CANOPY_POINTKD_RADIUS
#include "pointkd/format.glsl"

bool node_is_empty(PointKdNode n) {
    return n.lo.x > n.hi.x;
}

vec3 node_centre(PointKdNode n) {
    return 0.5 * (n.lo + n.hi);
}

#endif
