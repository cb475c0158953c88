// The build manifest of dist/ (scripts/manifest.mjs): exactly the nine artifacts, {plain, mtp} x
// {wall, profile} x {js, wasm} and the command line's module, with their sha256 and one source
// record; a missing, extra or
// altered artifact, or changed sources, makes the build pending, and the benchmark says so
// instead of printing figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './cli.mjs';
import { BUILDS, CLI, verifyManifest, sourceHash } from '../../scripts/manifest.mjs';

const dist = join(root, 'dist');

test('dist/manifest.json names exactly the nine artifacts, by hash, and the sources that built them', () => {
  const m = JSON.parse(readFileSync(join(dist, 'manifest.json'), 'utf8'));
  assert.equal(m.schema_version, 2);
  assert.equal(m.artifacts.length, 9);
  const runtimes = m.artifacts.filter((a) => a.build !== CLI.name);
  const pairs = runtimes.map((a) => `${a.mtp ? 'mtp' : 'plain'}/${a.profile ? 'profile' : 'wall'}/${a.kind}`).sort();
  assert.deepEqual(pairs, ['mtp/profile/js', 'mtp/profile/wasm', 'mtp/wall/js', 'mtp/wall/wasm', 'plain/profile/js',
                           'plain/profile/wasm', 'plain/wall/js', 'plain/wall/wasm']);
  // The command line's module is the checkout's build of it, byte for byte.
  const cli = m.artifacts.filter((a) => a.build === CLI.name);
  assert.deepEqual(cli.map((a) => [a.path, a.kind]), [['gemma4-cli.wasm', 'wasm']]);
  assert.ok(readFileSync(join(dist, 'gemma4-cli.wasm')).equals(readFileSync(join(root, 'build-wasm', 'gemma4.wasm'))),
            'dist/gemma4-cli.wasm is build-wasm/gemma4.wasm');
  for (const a of m.artifacts) assert.match(a.sha256, /^[0-9a-f]{64}$/);
  assert.equal(m.source.sha256, sourceHash().sha256, 'dist/ was built from these sources');
  assert.match(m.source.toolchain.clang, /clang version 19/);
  const v = verifyManifest(dist);
  assert.deepEqual(v.problems, []);
  for (const b of [...BUILDS, CLI]) assert.equal(v.builds[b.name], 'ok');
  // Each module loads its own build's WebAssembly.
  for (const b of BUILDS) assert.match(readFileSync(join(dist, `${b.file}.mjs`), 'utf8'), new RegExp(`"\\./${b.file}\\.wasm"`));
});

test('a missing, extra or altered artifact, or stale sources, leave builds pending', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'g4-manifest-'));
  try {
    const copy = (name) => {
      const d = join(tmp, name);
      cpSync(dist, d, { recursive: true });
      return d;
    };
    const altered = copy('altered');
    appendFileSync(join(altered, 'gemma4-mtp.wasm'), Buffer.from([0]));
    let v = verifyManifest(altered);
    assert.match(v.builds['mtp-wall'], /^pending: .*gemma4-mtp\.wasm: sha256 differs/);
    assert.equal(v.builds['plain-wall'], 'ok');

    const cliAltered = copy('cli-altered');
    appendFileSync(join(cliAltered, 'gemma4-cli.wasm'), Buffer.from([0]));
    v = verifyManifest(cliAltered);
    assert.match(v.builds.cli, /^pending: .*gemma4-cli\.wasm: sha256 differs/);
    for (const b of BUILDS) assert.equal(v.builds[b.name], 'ok');

    const missing = copy('missing');
    unlinkSync(join(missing, 'gemma4-profile.mjs'));
    v = verifyManifest(missing);
    assert.match(v.builds['plain-profile'], /gemma4-profile\.mjs is missing/);
    assert.equal(v.builds['mtp-profile'], 'ok');

    const extra = copy('extra');
    writeFileSync(join(extra, 'gemma4-other.wasm'), 'x');
    v = verifyManifest(extra);
    assert.ok(v.problems.some((p) => /extra artifact gemma4-other\.wasm/.test(p)));

    const listed = copy('listed');
    const m = JSON.parse(readFileSync(join(listed, 'manifest.json'), 'utf8'));
    m.artifacts.push({ ...m.artifacts[0], path: 'gemma4-ninth.mjs' });
    writeFileSync(join(listed, 'manifest.json'), JSON.stringify(m));
    assert.ok(verifyManifest(listed).problems.some((p) => /extra artifact gemma4-ninth\.mjs/.test(p)));

    const stale = copy('stale');
    const s = JSON.parse(readFileSync(join(stale, 'manifest.json'), 'utf8'));
    s.source.sha256 = '0'.repeat(64);
    writeFileSync(join(stale, 'manifest.json'), JSON.stringify(s));
    v = verifyManifest(stale);
    for (const b of [...BUILDS, CLI]) assert.match(v.builds[b.name], /stale/);

    // The benchmark prints "pending" for the altered build, figures for the others.
    const out = execFileSync(process.execPath, [join(root, 'scripts/bench-web.mjs'), '--dist', altered, '--backend', 'cpu',
                                                '--tokens', '4', '--json'], { encoding: 'utf8' });
    const report = JSON.parse(out.trim().split('\n').pop());
    const byBuild = Object.fromEntries(report.map((r) => [r.build, r]));
    assert.match(byBuild['mtp-wall'].status, /^pending/);
    assert.equal(byBuild['mtp-wall'].decode_tokens_per_s, undefined);
    assert.equal(byBuild['plain-wall'].status, 'ok');
    assert.ok(byBuild['plain-wall'].decode_tokens_per_s > 0);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
