import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startThreeServices, type ThreeServices } from './support/three-services.ts';

/**
 * What ships in deploy/ and compose.yaml, checked with the tools operators use: promtool (Debian's
 * prometheus package) for the Prometheus configuration and the alerts' unit tests, docker-compose's own
 * parser for compose.yaml (no engine needed), and the three services' /metrics for every metric name the
 * dashboard and the alerts use.
 */

const run = promisify(execFile);
const root = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

/** Names a PromQL expression reads: its identifiers less functions, keywords, labels and durations. */
function metricNames(expr: string): string[] {
  const PROMQL = new Set([
    'sum',
    'min',
    'max',
    'avg',
    'count',
    'rate',
    'irate',
    'increase',
    'delta',
    'histogram_quantile',
    'by',
    'without',
    'and',
    'or',
    'unless',
    'on',
    'ignoring',
    'group_left',
    'group_right',
    'bool',
    'offset',
    'abs',
    'clamp_min',
    'clamp_max',
    'topk',
    'bottomk',
  ]);
  const stripped = expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '');
  return [...new Set(stripped.match(/[A-Za-z_:][A-Za-z0-9_:]*/g) ?? [])].filter((name) => !PROMQL.has(name));
}

/** Every series name a /metrics page exports (histograms with their _bucket, _sum and _count). */
function exported(page: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of page.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

describe('deploy/: Prometheus alerts, the Grafana dashboard, clamd and compose.yaml', () => {
  it('passes promtool check config (with the alert rules it loads); every alert has passing unit tests', async () => {
    const { stdout: config } = await run('promtool', ['check', 'config', root('deploy/prometheus/prometheus.yml')]);
    assert.match(config, /SUCCESS: 10 rules found/);
    const { stdout: tests } = await run('promtool', ['test', 'rules', root('deploy/prometheus/alerts.test.yml')]);
    assert.match(tests, /SUCCESS/);
    const alerts = [...(await readFile(root('deploy/prometheus/alerts.yml'), 'utf8')).matchAll(/- alert: (\S+)/g)].map(
      (m) => m[1]!,
    );
    const tested = new Set(
      [...(await readFile(root('deploy/prometheus/alerts.test.yml'), 'utf8')).matchAll(/alertname: (\S+)/g)].map(
        (m) => m[1]!,
      ),
    );
    assert.deepEqual(
      alerts.filter((alert) => !tested.has(alert)),
      [],
      'every alert has a unit test',
    );
  });

  it('fails promtool when an alert does not fire as its test says (the check can fail)', async () => {
    const broken = (await readFile(root('deploy/prometheus/alerts.yml'), 'utf8')).replace('> 900', '> 90000');
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-alerts-'));
    try {
      await writeFile(join(dir, 'alerts.yml'), broken);
      await copyFile(root('deploy/prometheus/alerts.test.yml'), join(dir, 'alerts.test.yml'));
      await assert.rejects(run('promtool', ['test', 'rules', join(dir, 'alerts.test.yml')]), /SealpostEnvelopeStuck/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('parses compose.yaml with docker-compose against .env.example, which lists every secret it requires', async () => {
    const compose = await readFile(root('compose.yaml'), 'utf8');
    const example = await readFile(root('.env.example'), 'utf8');
    const required = [...new Set([...compose.matchAll(/\$\{([A-Z_]+):\?/g)].map((m) => m[1]!))];
    const listed = new Set([...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]!));
    assert.deepEqual(
      required.filter((name) => !listed.has(name)),
      [],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: compose.yaml's own ${VAR:?} syntax, not a template
      'every ${VAR:?} of compose.yaml is in .env.example',
    );
    const { stdout } = await run('docker-compose', [
      '--env-file',
      root('.env.example'),
      '-f',
      root('compose.yaml'),
      'config',
    ]);
    for (const service of ['auth', 'seal', 'exchange']) {
      assert.match(
        stdout,
        new RegExp(`\\n  ${service}:[\\s\\S]*?healthcheck:[\\s\\S]*?/readyz`),
        `${service} has a /readyz healthcheck`,
      );
    }
    // One service's block of the resolved file: from its name to the next service or top-level key.
    const block = (service: string) =>
      new RegExp(`\\n  ${service}:\\n([\\s\\S]*?)(?=\\n  [a-z-]+:\\n|\\n[a-z])`).exec(stdout)?.[1] ?? '';
    assert.match(block('seal'), /IPFS_CLUSTER_HOST/, "the seal service's block");
    assert.doesNotMatch(block('seal'), /S3_|minio/, 'the seal service gets no object-store credentials');
    for (const service of ['auth', 'exchange']) {
      assert.match(block(service), /S3_BUCKET: sealpost/, `${service} gets the object store`);
    }
    assert.match(stdout, /deploy\/grafana\/sealpost\.json/, 'Grafana gets the dashboard');
    assert.match(stdout, /deploy\/prometheus:\/etc\/prometheus/, 'Prometheus gets the alerts');
    assert.match(stdout, /deploy\/clamd\/clamd\.conf:\/etc\/clamav\/clamd\.conf/, 'clamd gets its archive limits');
  });

  it('pins every image of compose.yaml to a version and writes no password in it', async () => {
    const compose = await readFile(root('compose.yaml'), 'utf8');
    const images = [...compose.matchAll(/^\s*image:\s*(\S+)/gm)].map((m) => m[1]!);
    assert.ok(images.length >= 8, images.join(' '));
    for (const image of images) {
      const tag = /^[^:]+:(.+)$/.exec(image)?.[1];
      assert.ok(tag, `${image} has no tag (that is latest)`);
      assert.doesNotMatch(tag, /^(latest|release|stable|main|master)$/, `${image} moves`);
      assert.match(tag, /\d/, `${image} names a version`);
    }
    // A password, secret or key is given as ${VAR:?…} from .env, never as a value written here.
    for (const [, name, value] of compose.matchAll(
      /(?<![{\w])([A-Z0-9_]*(?:PASSWORD|PASS|SECRET)[A-Z0-9_]*):\s+"?(\$\{[^}]*\}|[^,}"\n]*)/g,
    )) {
      assert.match(value!, /^\$\{[A-Z_]+(:[?-][^}]*)?\}$/, `${name} is written in compose.yaml: ${value}`);
    }
    for (const [url] of compose.matchAll(/\w+:\/\/[^\s/@]+:[^\s/@]+@\S+/g)) {
      assert.match(url, /:\/\/[^:]+:\$\{[A-Z_]+:\?[^}]*\}@/, `a password written in a URL: ${url}`);
    }
  });

  it('has the dashboard ask for its Prometheus on import (__inputs), and every panel use it', async () => {
    const dashboard = JSON.parse(await readFile(root('deploy/grafana/sealpost.json'), 'utf8')) as {
      __inputs: Array<{ name: string; type: string; pluginId: string }>;
      templating: { list: Array<{ name: string; type: string; query: string; current: { value?: string } }> };
      panels: Array<{
        type: string;
        title: string;
        datasource?: { type: string; uid: string };
        targets?: Array<{ datasource?: { uid: string } }>;
      }>;
    };
    assert.deepEqual(
      dashboard.__inputs.map(({ name, type, pluginId }) => ({ name, type, pluginId })),
      [{ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }],
    );
    // Import replaces ${DS_PROMETHEUS} with the data source chosen; the variable then carries it to every panel
    // (and compose.yaml's provisioning, which replaces nothing, falls back to its default Prometheus).
    const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's ${DS_…} input syntax, not a template
    assert.equal(variable?.current.value, '${DS_PROMETHEUS}');
    assert.equal(variable?.query, 'prometheus');
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
    assert.ok(panels.length >= 20);
    for (const panel of panels) {
      assert.deepEqual(panel.datasource, { type: 'prometheus', uid: `\${${variable!.name}}` }, panel.title);
      for (const target of panel.targets ?? [])
        assert.equal(target.datasource?.uid, `\${${variable!.name}}`, panel.title);
    }
  });

  it("gives clamd limits refusing zip bombs: AlertExceedsMax on, MaxFileSize not below the stream's", async () => {
    // clamconf reads clamd.conf from a folder; a copy keeps the check from reading anything else there.
    const dir = await mkdtemp(join(tmpdir(), 'sealpost-clamconf-'));
    try {
      await copyFile(root('deploy/clamd/clamd.conf'), join(dir, 'clamd.conf'));
      const { stdout } = await run('clamconf', ['-c', dir]);
      // Its clamd.conf section alone (clamav-milter.conf has a MaxFileSize of its own).
      const section = stdout.split(/^Config file: /m).find((part) => part.startsWith('clamd.conf'))!;
      const value = (name: string) => new RegExp(`^${name} = "?([^"\\n]*)"?$`, 'm').exec(section)?.[1];
      assert.equal(value('AlertExceedsMax'), 'yes', 'past a limit, clamd answers FOUND instead of OK');
      for (const limit of ['MaxFileSize', 'MaxScanSize', 'MaxRecursion', 'MaxFiles', 'StreamMaxLength'])
        assert.ok(Number(value(limit)) > 0, `${limit} is set`);
      assert.ok(
        Number(value('MaxFileSize')) >= Number(value('StreamMaxLength')),
        'a plain file the stream takes is never refused for its size',
      );
      assert.ok(
        Number(value('StreamMaxLength')) >= 17 * 1024 * 1024,
        'the stream takes ATTACHMENT_MAX_SIZE (17MiB by default)',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('every metric the dashboard and the alerts use is exported', () => {
    let services: ThreeServices;
    before(async () => {
      services = await startThreeServices();
    });
    after(() => services?.stop());

    it('finds each name on the /metrics of auth, seal or exchange', async () => {
      const pages = await Promise.all(
        [services.harness.auth, services.seal, services.exchange].map(async (service) =>
          (await fetch(`${service.metricsUrl}/metrics`)).text(),
        ),
      );
      const names = new Set(pages.flatMap((page) => [...exported(page)]));
      names.add('up'); // Prometheus' own series for every target

      const dashboard = JSON.parse(await readFile(root('deploy/grafana/sealpost.json'), 'utf8')) as {
        panels: Array<{ targets?: Array<{ expr: string }> }>;
      };
      const dashboardExprs = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
      const alertExprs = [
        ...(await readFile(root('deploy/prometheus/alerts.yml'), 'utf8')).matchAll(
          /expr: (?:\|\n((?: {10}.*\n)+)|(.*))/g,
        ),
      ].map((m) => m[1] ?? m[2]!);
      assert.ok(
        dashboardExprs.length >= 20 && alertExprs.length === 10,
        `${dashboardExprs.length} panel queries, ${alertExprs.length} alert expressions`,
      );
      const used = new Set([...dashboardExprs, ...alertExprs].flatMap(metricNames));
      assert.ok(
        used.has('exchange_envelopes') &&
          used.has('seal_pins_overdue') &&
          used.has('seal_scrub_copies') &&
          used.has('auth_sign_ins_total'),
        [...used].join(' '),
      );
      assert.deepEqual(
        [...used].filter((name) => !names.has(name)),
        [],
        'used but not exported',
      );
    });
  });
});
