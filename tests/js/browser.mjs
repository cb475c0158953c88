// Headless Chromium (Debian's, driven by playwright-core, WebGPU on SwiftShader) for the browser
// tests, and the repository served by scripts/serve.mjs.
import { chromium } from 'playwright-core';
export { serve } from '../../scripts/serve.mjs';

export function launchBrowser() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--enable-unsafe-webgpu', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
}

export function closeServer(server) {
  server.closeAllConnections?.();
  server.close();
}
