/**
 * deploy/kubernetes/: every manifest validates against the Kubernetes API schemas (the
 * `kubernetes-models` validators: types, required fields, formats) and has no field the API does
 * not know (checked by TypeScript's excess-property check against the same package's API types,
 * as `kubectl apply --validate=strict` would refuse it); the Deployment keeps the promises of
 * docs/deployment.md; the ConfigMap's fleetgate.yaml passes `fleetgate config check` with exactly
 * the environment the Deployment gives the container.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import {
  PodDisruptionBudget,
  type IPodDisruptionBudget,
} from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ROOT, runNative } from './support/deploy-native.js';
import { execForm, last, readDockerfile } from './support/dockerfile.js';

const DIR = join(ROOT, 'deploy', 'kubernetes');

/** The model (validator) and the TypeScript type of each kind the manifests may use. */
const MODELS: Record<
  string,
  { model: new (data: never) => { validate(): void }; type: [string, string] }
> = {
  'v1/Namespace': { model: Namespace, type: ['kubernetes-models/v1/Namespace', 'INamespace'] },
  'v1/ServiceAccount': {
    model: ServiceAccount,
    type: ['kubernetes-models/v1/ServiceAccount', 'IServiceAccount'],
  },
  'v1/ConfigMap': { model: ConfigMap, type: ['kubernetes-models/v1/ConfigMap', 'IConfigMap'] },
  'v1/Service': { model: Service, type: ['kubernetes-models/v1/Service', 'IService'] },
  'apps/v1/Deployment': {
    model: Deployment,
    type: ['kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  },
  'policy/v1/PodDisruptionBudget': {
    model: PodDisruptionBudget,
    type: ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'],
  },
};

interface Manifest {
  file: string;
  index: number;
  doc: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  } & Record<string, unknown>;
}

const manifests: Manifest[] = readdirSync(DIR)
  .filter((f) => /\.ya?ml$/u.test(f))
  .sort()
  .flatMap((file) =>
    parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))
      .map((d, index) => {
        if (d.errors.length > 0)
          throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
        return { file, index, doc: d.toJS() as Manifest['doc'] };
      })
      .filter((m) => m.doc !== null),
  );

const only = <T>(kind: string): T & Manifest['doc'] => {
  const found = manifests.filter((m) => m.doc.kind === kind);
  expect(
    found.map((m) => m.file),
    kind,
  ).toHaveLength(1);
  return found[0]!.doc as T & Manifest['doc'];
};

describe('deploy/kubernetes manifests', () => {
  it('each validates against the Kubernetes API schema of its kind', () => {
    expect(manifests.length).toBeGreaterThanOrEqual(6);
    for (const { file, index, doc } of manifests) {
      const entry = MODELS[`${doc.apiVersion}/${doc.kind}`];
      expect(
        entry,
        `${file}#${index}: no schema here for ${doc.apiVersion} ${doc.kind}`,
      ).toBeDefined();
      expect(() => new entry!.model(doc as never).validate(), `${file}#${index}`).not.toThrow();
    }
  });

  it('has no field the API does not know (strict field validation)', () => {
    // Each manifest as an object literal of its API type: TypeScript reports excess properties
    // at every depth, and wrong literal values (an unknown `type:` or `protocol:`).
    const generated = join(ROOT, 'test', '.generated');
    mkdirSync(generated, { recursive: true });
    const dir = mkdtempSync(join(generated, 'k8s-'));
    try {
      const imports = new Set<string>();
      const body = manifests.map(({ file, index, doc }, i) => {
        const [from, type] = MODELS[`${doc.apiVersion}/${doc.kind}`]!.type;
        imports.add(`import type { ${type} } from '${from}';`);
        return `// ${file}#${index}\nexport const m${i}: ${type} = ${JSON.stringify(doc, null, 2)};\n`;
      });
      const source = join(dir, 'manifests.ts');
      writeFileSync(source, `${[...imports].join('\n')}\n${body.join('\n')}`);
      const program = ts.createProgram([source], {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        types: [],
      });
      const problems = ts.getPreEmitDiagnostics(program).map((d) => {
        const where =
          d.file === undefined || d.start === undefined
            ? ''
            : (() => {
                const text = d.file.text.slice(0, d.start);
                const manifest = [...text.matchAll(/^\/\/ (\S+)$/gmu)].at(-1)?.[1] ?? '?';
                return `${manifest}: `;
              })();
        return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
      expect(problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('runs two replicas, non-root on a read-only root filesystem, with probes and resources', () => {
    const deployment = only<IDeployment>('Deployment');
    const spec = deployment.spec!;
    expect(spec.replicas).toBe(2);
    expect(spec.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    const pod = spec.template.spec!;
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.containers).toHaveLength(1);
    const gateway = pod.containers[0]!;
    expect(gateway.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(gateway.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expect(gateway.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    for (const key of ['requests', 'limits'] as const) {
      expect(gateway.resources?.[key]?.memory, `resources.${key}.memory`).toBeDefined();
      expect(gateway.resources?.[key]?.cpu, `resources.${key}.cpu`).toBeDefined();
    }
    // The image's CMD, with the configuration where the ConfigMap is mounted.
    const cmd = execForm(last(readDockerfile().stages.at(-1)!, 'CMD')!);
    expect(gateway.command).toBeUndefined();
    expect(gateway.args).toEqual(cmd);
    const configPath = cmd[cmd.indexOf('--config') + 1]!;
    const mount = gateway.volumeMounts?.find((m) => configPath.startsWith(`${m.mountPath}/`));
    expect(mount?.readOnly).toBe(true);
    const volume = pod.volumes?.find((v) => v.name === mount?.name);
    expect(volume?.configMap?.name).toBe(only<IConfigMap>('ConfigMap').metadata.name);
    // A writable /tmp on the read-only root filesystem.
    const tmp = gateway.volumeMounts?.find((m) => m.mountPath === '/tmp');
    expect(pod.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
    // What the gateway writes is on a writable volume: the root filesystem is read-only.
    const { journal } = parse(only<IConfigMap>('ConfigMap').data!['fleetgate.yaml']!) as {
      journal?: string;
    };
    expect(journal, 'journal: (else ./data/claims under the read-only WORKDIR)').toMatch(/^\//u);
    const journalMount = gateway.volumeMounts?.find((m) => journal!.startsWith(`${m.mountPath}/`));
    expect(journalMount?.readOnly).not.toBe(true);
    const journalVolume = pod.volumes?.find((v) => v.name === journalMount?.name);
    expect(journalVolume?.emptyDir ?? journalVolume?.persistentVolumeClaim).toBeDefined();
    // The pod is given time to stop gracefully (listen.shutdownTimeout is 15 s).
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(15);
    // The port the probes and the Service use is the one the configuration listens on.
    const config = parse(only<IConfigMap>('ConfigMap').data!['fleetgate.yaml']!) as {
      listen: { port: number };
    };
    expect(gateway.ports?.find((p) => p.name === 'http')?.containerPort).toBe(config.listen.port);
  });

  it('selects the gateway pods from the Service and the PodDisruptionBudget, and keeps one up', () => {
    const deployment = only<IDeployment>('Deployment');
    const labels = deployment.spec!.template.metadata!.labels!;
    const service = only<IService>('Service');
    const pdb = only<IPodDisruptionBudget>('PodDisruptionBudget');
    for (const selector of [service.spec!.selector!, pdb.spec!.selector!.matchLabels!]) {
      for (const [k, v] of Object.entries(selector)) expect(labels[k], k).toBe(v);
    }
    expect(service.spec!.ports![0]!.targetPort).toBe('http');
    expect(pdb.spec!.minAvailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec!.minAvailable).toBeLessThan(deployment.spec!.replicas!);
    // One namespace for all.
    const namespaces = new Set(
      manifests.filter((m) => m.doc.kind !== 'Namespace').map((m) => m.doc.metadata.namespace),
    );
    expect([...namespaces]).toEqual([
      only<{ metadata: { name: string } }>('Namespace').metadata.name,
    ]);
  });

  it('takes every secret from a Secret reference, never a literal value', () => {
    const gateway = only<IDeployment>('Deployment').spec!.template.spec!.containers[0]!;
    const config = parse(only<IConfigMap>('ConfigMap').data!['fleetgate.yaml']!) as {
      store: string;
      auth: { tokens: { tokenEnv: string }[] };
      agents: { auth?: { bearerEnv?: string; headersEnv?: Record<string, string> } }[];
    };
    const named = [
      ...config.auth.tokens.map((t) => t.tokenEnv),
      ...config.agents.flatMap((a) => [
        ...(a.auth?.bearerEnv === undefined ? [] : [a.auth.bearerEnv]),
        ...Object.values(a.auth?.headersEnv ?? {}),
      ]),
      'PGPASSWORD',
    ];
    const env = new Map((gateway.env ?? []).map((e) => [e.name, e]));
    for (const name of named) {
      expect(env.get(name)?.valueFrom?.secretKeyRef?.name, `${name} from a Secret`).toBeTruthy();
      expect(env.get(name)?.value, `${name} has no literal value`).toBeUndefined();
    }
    expect(new URL(config.store).password).toBe('');
  });

  it('ships a fleetgate.yaml that passes `fleetgate config check` with the Deployment’s environment', async () => {
    const configMap = only<IConfigMap>('ConfigMap');
    const gateway = only<IDeployment>('Deployment').spec!.template.spec!.containers[0]!;
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-k8s-'));
    try {
      const file = join(dir, 'fleetgate.yaml');
      writeFileSync(file, configMap.data!['fleetgate.yaml']!);
      // The container's environment: every Secret reference resolved to a stand-in value.
      const env = Object.fromEntries(
        (gateway.env ?? []).map((e) => [
          e.name,
          e.value ?? `secret-${e.name.toLowerCase()}-0123456789`,
        ]),
      );
      const cli = ['node', '--import', 'tsx', 'src/cli/run.ts', 'config', 'check', file];
      const ok = await runNative(cli, { env });
      expect(ok.code, ok.output).toBe(0);
      // …and it fails when the Deployment lacks one of the variables the file names.
      const { FLEETGATE_ADMIN_TOKEN: _dropped, ...short } = env;
      const missing = await runNative(cli, { env: short });
      expect(missing.code).toBe(1);
      expect(missing.output).toMatch(/FLEETGATE_ADMIN_TOKEN is not set/u);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
