#!/usr/bin/env node
// The build manifest of dist/: the nine artifacts, {plain, mtp} x {wall, profile} x {js, wasm}
// and the command line's module (gemma4-cli.wasm, which bin/gemma4.mjs runs), each with its
// sha256, and one source record (the hash of the sources that built them and the toolchain's
// versions).
//   node scripts/manifest.mjs write DIR    writes DIR/manifest.json
//   node scripts/manifest.mjs verify DIR   checks it; prints each build's state, exit 1 if any is pending
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const SCHEMA_VERSION = 2;
export const BUILDS = [
  { name: 'plain-wall', file: 'gemma4', mtp: false, profile: false },
  { name: 'mtp-wall', file: 'gemma4-mtp', mtp: true, profile: false },
  { name: 'plain-profile', file: 'gemma4-profile', mtp: false, profile: true },
  { name: 'mtp-profile', file: 'gemma4-mtp-profile', mtp: true, profile: true },
];
// The command line's module: WebAssembly only (web/runtime.mjs is its host).
export const CLI = { name: 'cli', file: 'gemma4-cli' };
// What the artifacts are built from.
const SOURCES = ['src', 'web', 'cmake', 'CMakeLists.txt', 'scripts/build-web.sh', 'scripts/manifest.mjs', 'package.json'];

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

function listFiles(path) {
  const full = join(ROOT, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full).sort().flatMap((name) => listFiles(join(path, name)));
}

// The hash of the sources: sha256 over "path\0sha256(file)\n" for each file, sorted by path.
export function sourceHash() {
  const files = SOURCES.flatMap(listFiles).sort();
  const h = createHash('sha256');
  for (const f of files) h.update(`${f}\0${sha256(readFileSync(join(ROOT, f)))}\n`);
  return { sha256: h.digest('hex'), files: files.length };
}

const version = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0].trim();
  } catch {
    return 'missing';
  }
};

export function toolchain() {
  return { clang: version('clang++-19', ['--version']), 'wasm-opt': version('wasm-opt', ['--version']),
           esbuild: version('esbuild', ['--version']), node: process.version, cmake: version('cmake', ['--version']) };
}

// Every artifact: { build, path, kind }.
const expectedArtifacts = () => [
  ...BUILDS.flatMap((b) => [{ build: b.name, path: `${b.file}.mjs`, kind: 'js' },
                            { build: b.name, path: `${b.file}.wasm`, kind: 'wasm' }]),
  { build: CLI.name, path: `${CLI.file}.wasm`, kind: 'wasm' },
];
export const artifactNames = () => expectedArtifacts().map((a) => a.path);

export function writeManifest(dir) {
  const artifacts = expectedArtifacts().map(({ build, path, kind }) => {
    const b = BUILDS.find((x) => x.name === build);
    const bytes = readFileSync(join(dir, path));
    return { build, ...(b ? { mtp: b.mtp, profile: b.profile } : {}), kind, path, bytes: bytes.length,
             sha256: sha256(bytes) };
  });
  const manifest = { schema_version: SCHEMA_VERSION, artifacts,
                     source: { ...sourceHash(), toolchain: toolchain(), built_at: new Date().toISOString() } };
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

// Checks DIR against its manifest: { problems: [...], builds: { name: 'ok' | 'pending: why' } }.
// Pending: an artifact missing, extra, of another hash, or sources changed since the build.
export function verifyManifest(dir, { checkSources = true } = {}) {
  const problems = [];
  const names = [...BUILDS.map((b) => b.name), CLI.name];
  const builds = Object.fromEntries(names.map((n) => [n, []]));
  const path = join(dir, 'manifest.json');
  if (!existsSync(path)) {
    return { problems: ['manifest.json is missing'],
             builds: Object.fromEntries(names.map((n) => [n, 'pending: no manifest'])) };
  }
  let m;
  try {
    m = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    m = null;
    problems.push(`manifest.json: ${e.message}`);
  }
  if (m && m.schema_version !== SCHEMA_VERSION) problems.push(`manifest.json: schema_version ${m.schema_version}, expected ${SCHEMA_VERSION}`);
  const listed = new Map((m?.artifacts ?? []).map((a) => [a.path, a]));
  const expected = artifactNames();
  for (const { build, path: name } of expectedArtifacts()) {
    const a = listed.get(name);
    if (!a) { builds[build].push(`${name} not in the manifest`); continue; }
    if (a.build !== build) builds[build].push(`${name} is listed for build '${a.build}'`);
    if (!existsSync(join(dir, name))) { builds[build].push(`${name} is missing`); continue; }
    if (sha256(readFileSync(join(dir, name))) !== a.sha256) builds[build].push(`${name}: sha256 differs from the manifest`);
  }
  for (const name of listed.keys()) if (!expected.includes(name)) problems.push(`manifest lists an extra artifact ${name}`);
  for (const name of readdirSync(dir)) {
    if (/\.(mjs|wasm)$/.test(name) && !expected.includes(name)) problems.push(`extra artifact ${name} in ${relative(ROOT, dir) || dir}`);
  }
  if (m && (!m.source || typeof m.source.sha256 !== 'string')) problems.push('manifest.json: no source record');
  else if (m && checkSources && m.source.sha256 !== sourceHash().sha256) {
    for (const n of names) builds[n].push('stale: the sources changed since the build');
  }
  if (problems.length) for (const n of names) builds[n].push(...problems);
  return {
    problems: [...problems, ...Object.values(builds).flat()].filter((v, i, all) => all.indexOf(v) === i),
    builds: Object.fromEntries(Object.entries(builds).map(([k, v]) => [k, v.length ? `pending: ${v.join('; ')}` : 'ok'])),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [cmd, dir = join(ROOT, 'dist')] = process.argv.slice(2);
  if (cmd === 'write') {
    const m = writeManifest(dir);
    console.log(`${join(dir, 'manifest.json')}: ${m.artifacts.length} artifacts, sources ${m.source.sha256.slice(0, 12)}`);
  } else if (cmd === 'verify') {
    const r = verifyManifest(dir);
    for (const [name, state] of Object.entries(r.builds)) console.log(`${name}: ${state}`);
    process.exitCode = r.problems.length ? 1 : 0;
  } else {
    console.error('usage: node scripts/manifest.mjs write|verify [DIR]');
    process.exitCode = 2;
  }
}
