// A WebGPU adapter, asked for again a few times while the answer is null: a browser's first
// request can lose its connection to the GPU process and answer null where the next finds the
// adapter. Dawn in Node answers at once for good (tries 1 there).
export async function requestAdapter(gpu, options, tries = 4) {
  for (let i = 1; ; i++) {
    const adapter = await gpu.requestAdapter(options);
    if (adapter || i >= tries) return adapter;
    await new Promise((ok) => setTimeout(ok, 100));
  }
}
