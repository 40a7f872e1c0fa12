#version 460
// A ray of the driver's ray tracing that hits nothing keeps the miss raygen.rgen wrote.
#extension GL_EXT_ray_tracing : require

void main() {
}
