// Shared by every canopy kernel: GLSL version and extensions, the workgroup and subgroup size
// specialization constants (ids 0 and 1, set by src/vk/pipeline.rs), buffer-reference views
// of device memory, and the flattening of 2D dispatch grids (src/vk/recorder.rs grid_for).
#ifndef CANOPY_PRELUDE
#define CANOPY_PRELUDE

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require

// Stages canopy does not dispatch itself have no workgroup layout of its own: ray-tracing
// stages (glsl/native/) and applications' shaders (glsl/include/) define CANOPY_FOREIGN_STAGE.
#ifndef CANOPY_FOREIGN_STAGE
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint SUBGROUP_SIZE = 32;
const uint WORKGROUP_SIZE = gl_WorkGroupSize.x;
const uint SUBGROUPS_PER_WORKGROUP = WORKGROUP_SIZE / SUBGROUP_SIZE;
#endif

layout(buffer_reference, scalar, buffer_reference_align = 4) buffer U32s { uint v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer F32s { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer U32x2s { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer U32x4s { uvec4 v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer U64s { uint64_t v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer CoherentU32s { uint v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 8) coherent buffer CoherentU64s { uint64_t v[]; };

// The index that names nothing, shared by every structure: a root's parent (the BVH's and the
// kd-tree builder's entries), and a reservation that did not fit.
const uint NO_PARENT = 0xffffffffu;

#ifndef CANOPY_FOREIGN_STAGE
// The workgroup's index in a dispatch whose grid may be folded into 2D or 3D (x fastest; see
// common/dispatch.glsl). Grids past the end of the work hold a few extra groups: kernels skip them.
uint flat_workgroup_id() {
    return gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
}
#endif

// An element count: read from device memory when `count_address` is set (a count produced on
// the GPU), else the count the host pushed.
uint element_count(uint64_t count_address, uint host_count) {
    // An `if`, not `?:`: a selection may evaluate both sides, and address 0 must not be read.
    if (count_address != 0ul) {
        return U32s(count_address).v[0];
    }
    return host_count;
}

#endif
