// The "gpu" imports of the WebAssembly module, implemented with the WebGPU JS API (Dawn's
// `webgpu` package in Node, navigator.gpu in browsers). See src/backend/webgpu/gpu_imports.h.
// Pipelines and bind groups are made once and reused; a step's dispatches arrive as one command
// list (with the read that ends it, if any) and go to the GPU in a few submits. Profiling (the
// adapter's timestamp-query) has two modes: per kernel, every dispatch gets a compute pass of its
// own with timestamps, summed per kernel and, within a kernel, per dispatch size in workgroups;
// per pass, the dispatches run as they do unprofiled (a pass per submit) and each pass is timed
// whole, so the sum is the GPU's time for the work, gaps between dependent dispatches included.

// The command list's format and the bind group layout are the module's (src/backend/webgpu/wire.h),
// handed over by configure() before anything is recorded.
const UNIFORM_SLOT = 256;      // bytes a dispatch's parameters take (minUniformBufferOffsetAlignment)
const UNIFORM_SLOTS = 4096;
export const PROFILE_SCHEMA_VERSION = 3;  // 2: ops[name].by_workgroups; 3: mode, passes
export const PROFILE_KERNELS = 1, PROFILE_PASSES = 2;  // the modes profile() takes (0: off)
// Dispatches per submit (and compute pass), unless createGpuImports is told otherwise: the GPU
// starts on the first ones while the rest are still encoded, and each submit costs the GPU a
// pause; the size balances the two (docs/PERFORMANCE.md has the figures behind it). The module
// hands its command lists over at the same size.
export const SUBMIT_DISPATCHES = 128;
export const MAX_SUBMIT_DISPATCHES = UNIFORM_SLOTS;  // the uniform slots one write fills
const PROFILE_SLOTS = 2048;    // dispatches timed per submit (two queries each)

// A function (pass, group, slot) that sets `group` at the dynamic offset offsets[slot], in the
// form the WebGPU implementation takes fastest: Dawn's Node binding converts a one-element
// array quicker than a typed array's range, where a browser takes the range without making an
// array (scripts/bench-browser.mjs times both).
export function slotSetter(offsets) {
  const inNode = typeof process !== 'undefined' && !!process.versions?.node;
  if (!inNode) return (pass, group, slot) => pass.setBindGroup(0, group, offsets, slot, 1);
  const arrays = Array.from(offsets, (o) => [o]);
  return (pass, group, slot) => pass.setBindGroup(0, group, arrays[slot]);
}

// submitDispatches: 1 to MAX_SUBMIT_DISPATCHES; at the most, a step's dispatches go in one pass.
export function createGpuImports(device, memory, pending, { submitDispatches = SUBMIT_DISPATCHES } = {}) {
  if (!Number.isInteger(submitDispatches) || submitDispatches < 1 || submitDispatches > MAX_SUBMIT_DISPATCHES) {
    throw new RangeError(`gemma4: submitDispatches must be a whole number from 1 to ${MAX_SUBMIT_DISPATCHES}, not ${submitDispatches}`);
  }
  const buffers = [null];
  const kernels = [null];
  let L = null;               // the wire format, by name (configure)
  let layout = null;
  let pipelineLayout = null;
  const dummy = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  const uniforms = device.createBuffer({ size: UNIFORM_SLOT * UNIFORM_SLOTS, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const uniformData = new Uint32Array(UNIFORM_SLOT * UNIFORM_SLOTS / 4);
  const groups = new Map();  // groupKey(weight ids) -> { group, ids } (of the current arena)
  // Every slot's dynamic offset, set by setSlot in the form the implementation takes fastest.
  const slotOffsets = new Uint32Array(Math.max(UNIFORM_SLOTS, PROFILE_SLOTS)).map((_, i) => i * UNIFORM_SLOT);
  const setSlot = slotSetter(slotOffsets);
  const names = [null];      // kernel id -> kernel name
  let arena = 0;
  let error = null;
  const compileChecks = [];  // error scopes of kernels registered since the last read
  const allocChecks = [];    // error scopes of buffers created since the last read
  let kernelError = null;
  const reads = new Map();   // ticket -> Promise of the bytes (null when the read failed)
  let nextRead = 1;
  // Staging buffers of finished reads, by size, for the next reads of that size: making a mappable
  // buffer costs the host time on every read, and decoding reads once a token.
  const stagingPool = new Map();  // size -> [GPUBuffer]
  const STAGING_KEPT = 4;         // per size
  let disposed = false;
  // The host's time in submit() and read_start(): copying each command list, a read's staging
  // buffer, encoding and submitting. performance.now() is coarse in a page that is not
  // cross-origin isolated (100 us steps), so there the sum means little.
  const host = { ms: 0 };
  const handingOver = (fn) => {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      host.ms += performance.now() - t0;
    }
  };
  const takeStaging = (size) => stagingPool.get(size)?.pop()
    ?? device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const returnStaging = (buffer) => {
    const kept = stagingPool.get(buffer.size) ?? [];
    if (disposed || kept.length >= STAGING_KEPT) {
      buffer.destroy();
      return;
    }
    kept.push(buffer);
    stagingPool.set(buffer.size, kept);
  };
  const profile = {
    supported: device.features.has('timestamp-query'),
    mode: 0,                 // 0 (off), PROFILE_KERNELS or PROFILE_PASSES
    last: PROFILE_KERNELS,   // the mode of the profile last started
    generation: 0,
    ops: new Map(),          // name -> { ns, calls, sizes: Map(workgroups -> { ns, calls }) }
    passes: { ns: 0, count: 0, dispatches: 0 },  // PROFILE_PASSES
    pending: new Set(),      // readbacks of timestamps not yet summed
    querySet: null,
  };
  const querySet = () => profile.querySet ??= device.createQuerySet({ type: 'timestamp', count: 2 * PROFILE_SLOTS });
  // Sums a submit's timestamps, once they are readable: per kernel and dispatch size (groups[i]:
  // dispatch i's workgroups), or (no kernelIds) as one pass of `dispatches` dispatches.
  const collect = (encoder, kernelIds, groups, dispatches = 0) => {
    const n = Math.max(1, kernelIds.length);
    const resolve = device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    const read = device.createBuffer({ size: 16 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.resolveQuerySet(querySet(), 0, 2 * n, resolve, 0);
    encoder.copyBufferToBuffer(resolve, 0, read, 0, 16 * n);
    const generation = profile.generation;
    return () => {
      const p = read.mapAsync(GPUMapMode.READ).then(() => {
        const t = new BigUint64Array(read.getMappedRange());
        if (generation === profile.generation && kernelIds.length === 0) {
          profile.passes.ns += Number(t[1] - t[0]);
          profile.passes.count++;
          profile.passes.dispatches += dispatches;
        } else if (generation === profile.generation) {
          for (let i = 0; i < n; i++) {
            const name = names[kernelIds[i]], ns = Number(t[2 * i + 1] - t[2 * i]);
            const e = profile.ops.get(name) ?? { ns: 0, calls: 0, sizes: new Map() };
            e.ns += ns;
            e.calls++;
            const size = e.sizes.get(groups[i]) ?? { ns: 0, calls: 0 };
            size.ns += ns;
            size.calls++;
            e.sizes.set(groups[i], size);
            profile.ops.set(name, e);
          }
        }
        read.unmap();
      }).finally(() => {
        read.destroy();
        resolve.destroy();
        profile.pending.delete(p);
      });
      profile.pending.add(p);
    };
  };

  const bytes = () => new Uint8Array(memory().buffer);
  // A dispatch's weight ids as a key: a number while they are below 2^13 (four fit a double
  // exactly), else a string.
  const groupKey = (words, at, n) => {
    let key = 0, small = true;
    for (let i = 0; i < n; i++) {
      small &&= words[at + i] < 8192;
      key = key * 8192 + words[at + i];
    }
    return small && n <= 4 ? key : Array.from(words.subarray(at, at + n)).join(',');
  };
  const bindGroup = (words, at) => {
    const n = L.weightSlots;
    const key = groupKey(words, at, n);
    const hit = groups.get(key);
    if (hit) return hit.group;
    const ids = Array.from(words.subarray(at, at + n));
    const entries = [
      { binding: L.arenaBinding, resource: { buffer: buffers[arena] } },
      { binding: L.paramsBinding, resource: { buffer: uniforms, size: L.maxParamWords * 4 } },
      ...ids.map((id, i) => ({ binding: L.firstWeightBinding + i, resource: { buffer: id ? buffers[id] : dummy } })),
    ];
    const group = device.createBindGroup({ layout, entries });
    groups.set(key, { group, ids: [arena, ...ids] });
    return group;
  };

  const profileSnapshot = () => {
    const ops = {};
    let total = 0;
    for (const [name, e] of [...profile.ops].sort((a, b) => b[1].ns - a[1].ns)) {
      const by_workgroups = {};
      for (const [groups, d] of [...e.sizes].sort((a, b) => b[1].ns - a[1].ns)) {
        by_workgroups[groups] = { ms: d.ns / 1e6, calls: d.calls };
      }
      ops[name] = { ms: e.ns / 1e6, calls: e.calls, by_workgroups };
      total += e.ns / 1e6;
    }
    const { ns, count, dispatches } = profile.passes;
    const kernels = profile.last === PROFILE_KERNELS;
    return { schema_version: PROFILE_SCHEMA_VERSION, supported: profile.supported,
             mode: kernels ? 'kernels' : 'passes',
             fresh: profile.pending.size === 0 && (kernels ? profile.ops.size : count) > 0, generation: profile.generation,
             total_kernel_ms: total, ops, passes: { ms: ns / 1e6, count, dispatches } };
  };

  // Where each dispatch of a list starts.
  const startsOf = (words) => {
    const at = [];
    for (let p = 0; p < words.length; p += L.headerWords + words[p + L.paramWords]) at.push(p);
    return at;
  };
  // Dispatches [group, groupEnd)'s parameters into uniform slots 0 .. (one write).
  const writeParams = (words, starts, group, groupEnd) => {
    for (let i = group; i < groupEnd; i++) {
      const p = starts[i], n = words[p + L.paramWords], u = (i - group) * (UNIFORM_SLOT / 4);
      for (let k = 0; k < L.maxParamWords; k++) uniformData[u + k] = k < n ? words[p + L.headerWords + k] : 0;
    }
    device.queue.writeBuffer(uniforms, 0, uniformData, 0, (groupEnd - group) * (UNIFORM_SLOT / 4));
  };
  // Runs a command list (see webgpu_backend.cc): the dispatches' parameters go to the uniform
  // slots in one write, then submits of up to submitDispatches dispatches, one compute pass each
  // (a pass per dispatch when kernels are timed). A read ({ id, offset, size, staging }) is copied
  // in the last submit, after every dispatch.
  const run = (words, read) => {
    const timed = profile.mode === PROFILE_KERNELS && profile.supported;
    const passTimed = profile.mode === PROFILE_PASSES && profile.supported;
    const perSubmit = timed ? PROFILE_SLOTS : submitDispatches;
    const perGroup = timed ? PROFILE_SLOTS : UNIFORM_SLOTS;  // dispatches sharing one write
    const starts = startsOf(words);
    for (let group = 0; group < starts.length; group += perGroup) {
      const groupEnd = Math.min(group + perGroup, starts.length);
      writeParams(words, starts, group, groupEnd);
      for (let first = group; first < groupEnd; first += perSubmit) {
        const end = Math.min(first + perSubmit, groupEnd);
        const encoder = device.createCommandEncoder();
        let pass = timed ? null : encoder.beginComputePass(passTimed
          ? { timestampWrites: { querySet: querySet(), beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } }
          : undefined);
        const kernelIds = [], groups = [];
        let last = 0;
        // Plain indexing and loops: this runs a few hundred times per token.
        for (let i = first; i < end; i++) {
          const p = starts[i], kernel = words[p + L.kernel];
          if (timed) {
            const q = 2 * (i - first);
            pass = encoder.beginComputePass({
              timestampWrites: { querySet: querySet(), beginningOfPassWriteIndex: q, endOfPassWriteIndex: q + 1 },
            });
            last = 0;
            kernelIds.push(kernel);
            groups.push(words[p + L.groupsX] * words[p + L.groupsY]);
          }
          if (kernel !== last) pass.setPipeline(kernels[kernel]);
          last = kernel;
          setSlot(pass, bindGroup(words, p + L.weights), i - group);
          pass.dispatchWorkgroups(words[p + L.groupsX], words[p + L.groupsY]);
          if (timed) pass.end();
        }
        if (!timed) pass.end();
        const finish = timed ? collect(encoder, kernelIds, groups)
          : passTimed ? collect(encoder, [], [], end - first) : null;
        if (end === starts.length) copyRead(encoder, read);
        device.queue.submit([encoder.finish()]);
        finish?.();
      }
    }
    if (read && starts.length === 0) {
      const encoder = device.createCommandEncoder();
      copyRead(encoder, read);
      device.queue.submit([encoder.finish()]);
    }
  };
  const copyRead = (encoder, read) => {
    if (read) encoder.copyBufferToBuffer(buffers[read.id], read.offset, read.staging, 0, read.size);
  };

  // A copy of the command list the module hands over at ptr (count words).
  const listAt = (ptr, count) => new Uint32Array(memory().buffer, ptr, count).slice();
  // Starts a read (read_start): runs the list with a copy of the bytes in its last submit.
  const startRead = (ptr, count, id, offset, size) => {
    const ticket = nextRead++;
    let staging = null;
    try {
      staging = takeStaging(size);
      run(listAt(ptr, count), { id, offset, size, staging });
    } catch (e) {
      error ??= e;
      staging?.destroy();
      reads.set(ticket, Promise.resolve(null));
      return ticket;
    }
    const checks = [...compileChecks.splice(0), ...allocChecks.splice(0)];
    // A buffer whose read failed is destroyed, not kept.
    reads.set(ticket, Promise.all(checks).then(() => staging.mapAsync(GPUMapMode.READ)).then(() => {
      if (kernelError) throw kernelError;
      if (error) throw error;
      const data = new Uint8Array(staging.getMappedRange()).slice();
      staging.unmap();
      returnStaging(staging);
      return data;
    }).catch((e) => {
      error = e;
      if (e === kernelError) console.error(e.message);
      staging.destroy();
      return null;
    }));
    return ticket;
  };

  // An import that throws must not unwind through the module (its cleanup would not run): the
  // error is kept, and fails the next read as a GPU error does.
  const guarded = (fn, failed = undefined) => (...args) => {
    try {
      return fn(...args);
    } catch (e) {
      error ??= e;
      return failed;
    }
  };

  return {
    // The command list's format and the bind group layout (src/backend/webgpu/wire.h): count
    // words at ptr, named by the space-separated names.
    configure: guarded((ptr, count, namesPtr, namesLength) => {
      const values = new Uint32Array(memory().buffer, ptr, count);
      const names = new TextDecoder().decode(bytes().subarray(namesPtr, namesPtr + namesLength)).split(' ');
      L = Object.fromEntries(names.map((name, i) => [name, values[i]]));
      const storage = (type) => ({ visibility: GPUShaderStage.COMPUTE, buffer: { type } });
      const entries = [
        { binding: L.arenaBinding, ...storage('storage') },
        { binding: L.paramsBinding, visibility: GPUShaderStage.COMPUTE,
          buffer: { type: 'uniform', hasDynamicOffset: true, minBindingSize: L.maxParamWords * 4 } },
      ];
      for (let i = 0; i < L.weightSlots; i++) entries.push({ binding: L.firstWeightBinding + i, ...storage('read-only-storage') });
      layout = device.createBindGroupLayout({ entries });
      pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });
      groups.clear();
    }),
    create_buffer(size, kind) {
      try {
        const usage = kind === 0
          ? GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST
          : GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
        // Out of memory shows up asynchronously: it fails the next read (and settle()).
        device.pushErrorScope('out-of-memory');
        buffers.push(device.createBuffer({ size, usage }));
        allocChecks.push(device.popErrorScope().then((e) => {
          if (e) error ??= new Error(`out of GPU memory allocating ${size} bytes: ${e.message}`);
        }));
        if (kind === 0) {
          arena = buffers.length - 1;
          groups.clear();  // every cached group binds the arena
        }
        return buffers.length - 1;
      } catch (e) {
        error = e;
        return 0;
      }
    },
    destroy_buffer: guarded((id) => {
      buffers[id]?.destroy();
      buffers[id] = null;
      for (const [key, e] of [...groups]) {
        if (e.ids.includes(id)) groups.delete(key);
      }
    }),
    write_buffer: guarded((id, offset, ptr, size) => {
      device.queue.writeBuffer(buffers[id], offset, bytes(), ptr, size);
    }),
    register_kernel: guarded((id, ptr, length, namePtr, nameLength) => {
      const code = new TextDecoder().decode(bytes().subarray(ptr, ptr + length));
      names[id] = new TextDecoder().decode(bytes().subarray(namePtr, namePtr + nameLength));
      // A kernel that does not compile fails the next read (not silently wrong results).
      device.pushErrorScope('validation');
      const module = device.createShaderModule({ code });
      kernels[id] = device.createComputePipeline({ layout: pipelineLayout, compute: { module, entryPoint: 'main' } });
      compileChecks.push(device.popErrorScope().then((e) => {
        if (e) kernelError ??= new Error(`gemma4: WGSL kernel '${names[id]}' does not compile: ${e.message}`);
      }));
      return 1;
    }, 0),
    submit: guarded((ptr, count) => {
      handingOver(() => {
        run(listAt(ptr, count), null);
      });
    }),
    // Profiling: PROFILE_KERNELS or PROFILE_PASSES starts that mode (clearing what was summed),
    // 0 stops.
    profile(mode) {
      profile.mode = mode === PROFILE_KERNELS || mode === PROFILE_PASSES ? mode : 0;
      if (profile.mode) {
        profile.last = profile.mode;
        profile.generation++;
        profile.ops.clear();
        profile.passes = { ns: 0, count: 0, dispatches: 0 };
      }
    },
    // Async like read_finish: the profile as versioned JSON, written to dst (at most cap bytes);
    // returns its length.
    profile_read(dst, cap) {
      pending.promise = Promise.allSettled([...profile.pending]).then(() => {
        const text = new TextEncoder().encode(JSON.stringify(profileSnapshot()));
        if (text.length > cap) return 0;
        bytes().set(text, dst);
        return text.length;
      });
      return 0;
    },
    // Runs the command list not yet submitted (count words at ptr, maybe none), with a copy of
    // the bytes after it, and starts mapping them; the module goes on recording (the next step)
    // while the GPU works. Returns the read's ticket.
    read_start(ptr, count, id, offset, size) {
      return handingOver(() => startRead(ptr, count, id, offset, size));
    },
    // Async: the module is suspended (asyncify) until the read's bytes are in its memory.
    read_finish(ticket, dst, size) {
      const read = reads.get(ticket);
      reads.delete(ticket);
      pending.promise = (read ?? Promise.resolve(null)).then((data) => {
        if (!data || data.length !== size) return 0;
        bytes().set(data, dst);
        return 1;
      });
      return 0;
    },
    read_cancel(ticket) {
      reads.delete(ticket);  // its staging buffer goes once mapped
    },
    host_ms() {
      return host.ms;
    },
    submit_dispatches() {
      return submitDispatches;
    },
    max_binding_size() {
      return device.limits.maxStorageBufferBindingSize;
    },
    workgroup_storage_size() {
      return device.limits.maxComputeWorkgroupStorageSize;
    },
    subgroup_size() {
      const info = device.adapterInfo;
      if (!device.features.has('subgroups') || !info || info.subgroupMinSize !== info.subgroupMaxSize) return 0;
      return info.subgroupMinSize ?? 0;
    },
    lastError: () => error,
    // Resolves when every allocation so far is known to have worked, to the first error or null.
    async settle() {
      await Promise.all(allocChecks.splice(0));
      return error;
    },
    // Destroys what the bridge itself made (the module's buffers are the module's to destroy).
    dispose() {
      disposed = true;
      for (const kept of stagingPool.values()) kept.forEach((b) => b.destroy());
      stagingPool.clear();
      uniforms.destroy();
      dummy.destroy();
      profile.querySet?.destroy();
      profile.querySet = null;
      groups.clear();
    },
    // Destroys the buffers the module made and did not destroy: for a module that stopped (a
    // trap), which can no longer destroy its own.
    destroyModuleBuffers() {
      for (let i = 1; i < buffers.length; i++) {
        buffers[i]?.destroy();
        buffers[i] = null;
      }
    },
    profileSnapshot,
    // Buffers the module made and has not destroyed (unloading must bring this back to 0).
    liveBuffers: () => buffers.filter((b) => b !== null).length,
    createdBuffers: () => buffers.length - 1,
  };
}
