// The README's JavaScript quick start, as written, against a packed install: `npm pack` of this
// checkout (dist/ built by scripts/build-web.sh), the tarball installed into a fresh folder outside
// the checkout (offline; the `webgpu` package, which the README installs from the registry, linked
// from this checkout's node_modules), the demo pair copied beside it as the README copies it, and
// the first ```js block under "## JavaScript quick start" run there with node. Needs a WebGPU
// adapter: run under `source .lavapipe/env.sh`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

// The first ```js block after the heading.
function quickStart(text) {
  const heading = text.indexOf('\n## JavaScript quick start\n');
  assert.ok(heading >= 0, 'README.md has no "## JavaScript quick start" heading');
  const next = text.indexOf('\n## ', heading + 1);
  const section = text.slice(heading, next < 0 ? undefined : next);
  const block = /\n```js\n([\s\S]*?)\n```\n/.exec(section);
  assert.ok(block, 'the JavaScript quick start has no ```js block');
  return block[1] + '\n';
}

test('the quick start names the tarball npm pack makes and imports the package by name', () => {
  const code = quickStart(readme);
  assert.match(code, new RegExp(`from '${pkg.name}'`));
  const section = readme.slice(readme.indexOf('\n## JavaScript quick start\n'));
  assert.ok(section.includes(`npm install "$G4/${pkg.name}-${pkg.version}.tgz"`),
            `the install line names ${pkg.name}-${pkg.version}.tgz`);
  assert.ok(section.includes(` webgpu@${pkg.peerDependencies.webgpu}\n`), 'the install line names the webgpu version package.json asks for');
  for (const file of Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e)))) {
    assert.ok(pkg.files.some((f) => file.slice(2).startsWith(f)), `package.json "files" holds ${file}`);
  }
});

test('the README quick start runs as written against a packed install', { timeout: 900_000 }, () => {
  assert.ok(existsSync(join(root, 'dist', 'gemma4-mtp.mjs')), 'dist/ is missing: run scripts/build-web.sh');
  const dir = mkdtempSync(join(tmpdir(), 'g4-quickstart-'));
  try {
    const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' })
      .trim().split('\n').pop();
    assert.equal(packed, `${pkg.name}-${pkg.version}.tgz`);
    const project = join(dir, 'hello');
    mkdirSync(project);
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(dir, packed)],
                 { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
    assert.ok(existsSync(join(project, 'node_modules', pkg.name, 'dist', 'gemma4-mtp.wasm')), 'the tarball holds dist/');
    symlinkSync(join(root, 'node_modules', 'webgpu'), join(project, 'node_modules', 'webgpu'), 'dir');
    cpSync(join(root, 'testdata', 'models', 'demo'), join(project, 'demo'), { recursive: true });
    writeFileSync(join(project, 'quickstart.mjs'), quickStart(readme));

    const run = spawnSync(process.execPath, ['quickstart.mjs'], { cwd: project, encoding: 'utf8', timeout: 840_000 });
    assert.equal(run.status, 0, `quickstart.mjs exited with ${run.status} (${run.signal ?? 'no signal'}):\n${run.stderr}`);
    const lines = run.stdout.trimEnd().split('\n');
    const counters = /^(\d+) of (\d+) drafts accepted$/.exec(lines.at(-1));
    assert.ok(counters, `the last line gives the drafts accepted: ${JSON.stringify(run.stdout)}`);
    assert.ok(Number(counters[2]) > 0 && Number(counters[1]) <= Number(counters[2]), `drafts: ${lines.at(-1)}`);
    const words = lines.slice(0, -1).join(' ').match(/[A-Za-z]+/g) ?? [];
    assert.ok(words.length >= 3, `the reply is text: ${JSON.stringify(run.stdout)}`);

    // The package's `gemma4` command runs the module the tarball carries (dist/gemma4-cli.wasm).
    assert.ok(!existsSync(join(project, 'node_modules', pkg.name, 'build-wasm')), 'the tarball holds no build folder');
    const cli = spawnSync(join(project, 'node_modules', '.bin', 'gemma4'),
                          ['generate', '--model', 'demo', '--prompt', 'Hello', '--max-new-tokens', '3', '--backend', 'cpu',
                           '--json'], { cwd: project, encoding: 'utf8', timeout: 120_000, env: { ...process.env, G4_WASM: '' } });
    assert.equal(cli.status, 0, `gemma4 generate exited with ${cli.status}:\n${cli.stderr}`);
    assert.equal(JSON.parse(cli.stdout.trim().split('\n').pop()).tokens.length, 3, cli.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
