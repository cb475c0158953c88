// The functions the JavaScript host provides to the WebGPU backend (module "gpu"), implemented
// with the WebGPU JS API in web/gpu_bridge.mjs. Sizes and offsets are in bytes.
#pragma once

#include <cstdint>

#define G4_GPU_IMPORT(name) __attribute__((import_module("gpu"), import_name(#name)))

extern "C" {
// The command list's format and the bind group layout (wire.h): `count` words at `layout`, named
// by the space-separated `names`. Called once, before anything is recorded.
G4_GPU_IMPORT(configure)
void g4_gpu_configure(const uint32_t* layout, uint32_t count, const char* names, uint32_t names_length);
// kind 0: the activation arena (storage, copy source and destination); 1: weights (storage, copy
// destination). Returns a handle > 0, or 0 when the device cannot allocate it.
G4_GPU_IMPORT(create_buffer) uint32_t g4_gpu_create_buffer(double size, uint32_t kind);
G4_GPU_IMPORT(destroy_buffer) void g4_gpu_destroy_buffer(uint32_t buffer);
G4_GPU_IMPORT(write_buffer) void g4_gpu_write_buffer(uint32_t buffer, double offset, const void* src, uint32_t size);
// Compiles WGSL source as kernel `id` (entry point "main"); `name` labels it in profiles.
G4_GPU_IMPORT(register_kernel)
uint32_t g4_gpu_register_kernel(uint32_t id, const char* wgsl, uint32_t length, const char* name, uint32_t name_length);
// Runs a recorded command list (wire.h), in a few submits (web/gpu_bridge.mjs).
G4_GPU_IMPORT(submit) void g4_gpu_submit(const uint32_t* words, uint32_t count);
// Runs a recorded command list (maybe empty) as submit does, and starts reading bytes back: a copy
// in its last submit, after every dispatch. Returns a ticket (> 0) for read_finish or read_cancel.
G4_GPU_IMPORT(read_start)
uint32_t g4_gpu_read_start(const uint32_t* words, uint32_t count, uint32_t buffer, double offset, uint32_t size);
// Copies a started read's bytes into wasm memory once the GPU has made them; suspends the caller
// (asyncify). Returns 1, or 0 when the read failed (device lost, a kernel error, out of memory).
G4_GPU_IMPORT(read_finish) uint32_t g4_gpu_read_finish(uint32_t ticket, void* dst, uint32_t size);
// Forgets a started read that will not be finished.
G4_GPU_IMPORT(read_cancel) void g4_gpu_read_cancel(uint32_t ticket);
// GPU timing with timestamp queries, where the adapter has them: 1 starts timing each dispatch
// (a pass each), 2 each submit's pass whole, afresh; 0 stops (Backend::ProfileMode).
G4_GPU_IMPORT(profile) void g4_gpu_profile(uint32_t mode);
// The profile so far as JSON (see web/gpu_bridge.mjs) into dst; returns its length, 0 if it does
// not fit. Suspends the caller (asyncify) until every timed submit is summed.
G4_GPU_IMPORT(profile_read) uint32_t g4_gpu_profile_read(char* dst, uint32_t cap);
// Dispatches the host puts in one submit (and one compute pass): a command list is handed over
// when it holds that many.
G4_GPU_IMPORT(submit_dispatches) uint32_t g4_gpu_submit_dispatches();
// Milliseconds the host has spent in submit and read_start since the imports were made: copying
// each command list, a read's staging buffer, encoding and submitting (JavaScript and the WebGPU
// implementation). Coarse in a page that is not cross-origin isolated (its clock's steps).
G4_GPU_IMPORT(host_ms) double g4_gpu_host_ms();
// The adapter's maxStorageBufferBindingSize.
G4_GPU_IMPORT(max_binding_size) double g4_gpu_max_binding_size();
// The device's maxComputeWorkgroupStorageSize.
G4_GPU_IMPORT(workgroup_storage_size) double g4_gpu_workgroup_storage_size();
// The width of every subgroup when the device has the "subgroups" feature and one width, else 0.
G4_GPU_IMPORT(subgroup_size) uint32_t g4_gpu_subgroup_size();
}
