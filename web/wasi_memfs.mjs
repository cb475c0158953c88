// The few WASI calls the module makes, for the JavaScript API in browsers and Node: files come
// from a map (path -> Uint8Array, or a source { size, read(offset, length) } whose read answers
// bytes or a Promise of them: a Blob, a file in Node; read-only, under a preopened "/"), output
// goes to callbacks, clocks and exit are the obvious ones, random bytes come from
// crypto.getRandomValues. Anything else answers ENOSYS. A Promise from fd_read suspends the
// module (web/module.mjs). No callback's throw reaches the module: unwinding through it would skip
// its cleanup.
const ESUCCESS = 0, EBADF = 8, EIO = 29, ENOENT = 44, ENOSYS = 52, EINVAL = 28;

// onReadError(error) hears of each failed read of a source (a throw or a rejected Promise), which
// the module sees as EIO.
export function createMemoryWasi({ files, stdout = () => {}, stderr = () => {}, env = { PWD: '/' },
                                   onReadError = () => {} }) {
  let memory = null;
  const open = new Map();  // fd -> { data, pos }
  let nextFd = 4;
  const view = () => new DataView(memory.buffer);
  const u8 = () => new Uint8Array(memory.buffer);
  const text = (ptr, len) => new TextDecoder('utf-8', { ignoreBOM: true }).decode(u8().subarray(ptr, ptr + len));
  const envList = Object.entries(env).map(([k, v]) => new TextEncoder().encode(`${k}=${v}\0`));
  const sizeOf = (data) => data.size ?? data.length;
  const resolvePath = (p) => '/' + p.replace(/^\/+/, '').split('/').filter((s) => s && s !== '.').join('/');
  const imports = {
    environ_sizes_get(countPtr, sizePtr) {
      view().setUint32(countPtr, envList.length, true);
      view().setUint32(sizePtr, envList.reduce((n, e) => n + e.length, 0), true);
      return ESUCCESS;
    },
    environ_get(ptrs, buf) {
      for (const e of envList) {
        view().setUint32(ptrs, buf, true);
        u8().set(e, buf);
        ptrs += 4;
        buf += e.length;
      }
      return ESUCCESS;
    },
    clock_time_get(_id, _precision, out) {
      view().setBigUint64(out, BigInt(Math.round(performance.now() * 1e6)), true);
      return ESUCCESS;
    },
    fd_prestat_get(fd, out) {
      if (fd !== 3) return EBADF;
      view().setUint8(out, 0);
      view().setUint32(out + 4, 1, true);
      return ESUCCESS;
    },
    fd_prestat_dir_name(fd, ptr, len) {
      if (fd !== 3 || len < 1) return EBADF;
      u8()[ptr] = 47;  // "/"
      return ESUCCESS;
    },
    fd_fdstat_get(fd, out) {
      if (fd > 3 && !open.has(fd)) return EBADF;
      view().setUint8(out, fd <= 2 ? 2 : fd === 3 ? 3 : 4);  // character device, directory, regular file
      view().setUint16(out + 2, 0, true);
      view().setBigUint64(out + 8, 0xffffffffn, true);
      view().setBigUint64(out + 16, 0xffffffffn, true);
      return ESUCCESS;
    },
    fd_fdstat_set_flags() { return ESUCCESS; },
    path_open(dirFd, _dirflags, pathPtr, pathLen, oflags, _rights, _inheriting, _fdflags, fdOut) {
      if (dirFd !== 3) return EBADF;
      if (oflags & 1) return ENOSYS;  // O_CREAT: read-only file system
      const data = files.get(resolvePath(text(pathPtr, pathLen)));
      if (!data) return ENOENT;
      const fd = nextFd++;
      open.set(fd, { data, pos: 0 });
      view().setUint32(fdOut, fd, true);
      return ESUCCESS;
    },
    path_filestat_get(dirFd, _flags, pathPtr, pathLen, out) {
      if (dirFd !== 3) return EBADF;
      const data = files.get(resolvePath(text(pathPtr, pathLen)));
      if (!data) return ENOENT;
      for (let i = 0; i < 64; i += 8) view().setBigUint64(out + i, 0n, true);
      view().setUint8(out + 16, 4);
      view().setBigUint64(out + 32, BigInt(sizeOf(data)), true);
      return ESUCCESS;
    },
    // The file system is read-only: creating, renaming and removing (which synth and the safetensors
    // writer may ask for) are refused, and so is listing a folder (synth's check that its folder is
    // empty).
    path_create_directory() { return ENOSYS; },
    fd_readdir() { return ENOSYS; },
    path_rename() { return ENOSYS; },
    path_unlink_file() { return ENOSYS; },
    path_remove_directory() { return ENOSYS; },
    fd_read(fd, iovs, count, nread) {
      const f = open.get(fd);
      if (!f) return EBADF;
      const list = [];
      for (let i = 0; i < count; i++) list.push([view().getUint32(iovs + 8 * i, true), view().getUint32(iovs + 8 * i + 4, true)]);
      const want = list.reduce((n, [, len]) => n + len, 0);
      const size = sizeOf(f.data);
      const at = f.pos, n = Math.max(0, Math.min(want, size - at));
      // Scatters `chunk` (the bytes at `at`) over the iovecs.
      const finish = (chunk) => {
        let done = 0;
        for (const [ptr, len] of list) {
          if (done >= chunk.length) break;
          const part = chunk.subarray(done, done + len);
          u8().set(part, ptr);
          done += part.length;
        }
        f.pos = at + chunk.length;
        view().setUint32(nread, chunk.length, true);
        return ESUCCESS;
      };
      if (f.data instanceof Uint8Array) return finish(f.data.subarray(at, at + n));
      // A source's error must not unwind through the module (its cleanup would not run): EIO.
      const failed = (e) => {
        onReadError(e);
        return EIO;
      };
      let r;
      try {
        r = n > 0 ? f.data.read(at, n) : new Uint8Array(0);
      } catch (e) {
        return failed(e);
      }
      return typeof r.then === 'function' ? r.then(finish, failed) : finish(r);
    },
    fd_seek(fd, offset, whence, out) {
      const f = open.get(fd);
      if (!f) return EBADF;
      const base = whence === 0 ? 0 : whence === 1 ? f.pos : sizeOf(f.data);
      const pos = base + Number(offset);
      if (pos < 0) return EINVAL;
      f.pos = pos;
      view().setBigUint64(out, BigInt(pos), true);
      return ESUCCESS;
    },
    fd_write(fd, iovs, count, nwritten) {
      let total = 0;
      for (let i = 0; i < count; i++) {
        const ptr = view().getUint32(iovs + 8 * i, true), len = view().getUint32(iovs + 8 * i + 4, true);
        const s = text(ptr, len);
        try {
          (fd === 2 ? stderr : stdout)(s);
        } catch {
          // The caller's log broke: its line is lost, the module goes on.
        }
        total += len;
      }
      view().setUint32(nwritten, total, true);
      return ESUCCESS;
    },
    fd_close(fd) { return open.delete(fd) ? ESUCCESS : EBADF; },
    // The random source (unseeded sampling draws its seed here): the host's CSPRNG, in the
    // pieces of at most 65,536 bytes getRandomValues takes.
    random_get(ptr, len) {
      const bytes = u8().subarray(ptr, ptr + len);
      for (let at = 0; at < len; at += 65536) globalThis.crypto.getRandomValues(bytes.subarray(at, Math.min(len, at + 65536)));
      return ESUCCESS;
    },
    proc_exit(code) { throw new Error(`gemma4: exited with ${code}`); },
  };
  return {
    imports,
    initialize(instance) {
      memory = instance.exports.memory;
      instance.exports._initialize?.();
    },
  };
}
