import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { tenancySentences, tenantValues, tplValuesIn, type TemplateText } from '../../../src/scaffold/tenant-values.js';

const CHART = path.resolve(import.meta.dirname, '../../fixtures/charts/tenant-extras');

async function templatesOf(dir: string): Promise<TemplateText[]> {
  const names = (await readdir(path.join(dir, 'templates'))).sort();
  return Promise.all(names.map(async (n) => ({ path: `templates/${n}`, text: await readFile(path.join(dir, 'templates', n), 'utf8') })));
}

describe('values a CR author writes templates or objects through', () => {
  it("finds them in a bitnami-style chart: common.tplvalues.render over extraDeploy's items and a value, tpl of a value and of toYaml in a with, a plain extra-objects list", async () => {
    const values: unknown = parse(await readFile(path.join(CHART, 'values.yaml'), 'utf8'));
    expect(tenantValues(await templatesOf(CHART), values)).toEqual([
      { path: 'commonAnnotations', how: ['tpl'], templates: ['templates/configmap.yaml'] },
      { path: 'configuration', how: ['tpl'], templates: ['templates/configmap.yaml'] },
      { path: 'extraDeploy', how: ['tpl', 'objects'], templates: ['templates/extra-list.yaml'] },
      { path: 'metrics.extraManifests', how: ['objects'], templates: [] },
      { path: 'sidecars', how: ['tpl'], templates: ['templates/configmap.yaml'] },
    ]);
  });

  it('reads the forms charts use', () => {
    expect(tplValuesIn('{{ tpl .Values.a . }}')).toEqual(['a']);
    expect(tplValuesIn('{{- tpl (toYaml .Values.b.c) $ | nindent 2 }}')).toEqual(['b.c']);
    expect(tplValuesIn('{{ tpl (.Values.d | toYaml) $ }}')).toEqual(['d']);
    expect(tplValuesIn('{{ tpl $.Values.e $ }}')).toEqual(['e']);
    expect(tplValuesIn('{{ include "common.tplvalues.render" (dict "context" $ "value" .Values.f.g) }}')).toEqual(['f.g']);
    expect(tplValuesIn('{{ include "mychart.tplvalues.render" ( dict "value" $.Values.h "context" $ ) }}')).toEqual(['h']);
    // Through a range's variable, and a field of each item.
    expect(tplValuesIn('{{- range $i, $obj := .Values.extraObjects }}\n{{ tpl (toYaml $obj) $ }}\n{{- end }}')).toEqual(['extraObjects[]']);
    expect(tplValuesIn('{{- range .Values.jobs }}{{ tpl .script $ }}{{ end }}')).toEqual(['jobs[].script']);
    // Blocks close: after {{ end }}, `.` is the root again.
    expect(tplValuesIn('{{ with .Values.x }}{{ end }}{{ tpl (toYaml .) $ }}')).toEqual([]);
    expect(tplValuesIn('{{ if .Values.y }}{{ tpl .Values.z . }}{{ end }}')).toEqual(['z']);
  });

  it('ignores what is not a value rendered as a template', () => {
    expect(tplValuesIn('{{ toYaml .Values.resources | nindent 2 }}{{ template "x" . }}{{ .Values.tplName }}')).toEqual([]);
    expect(tplValuesIn('{{/* tpl .Values.commented */}}')).toEqual([]);
    expect(tenantValues([], { extraEnvVars: [], extraDeployments: 3, sub: { extraObjects: [] } })).toEqual([
      { path: 'sub.extraObjects', how: ['objects'], templates: [] },
    ]);
  });

  it('says what the generated RBAC then lends a CR author, and the remedy', () => {
    const [values, grant, remedy] = tenancySentences(
      'web',
      [{ path: 'extraDeploy', how: ['tpl', 'objects'], templates: ['templates/extra-list.yaml'] }],
      ['configmaps', 'deployments.apps'],
    );
    expect(values).toBe(
      'CR authors can write templates or whole objects through 1 value(s) of web: extraDeploy: a list of objects, rendered with tpl (templates/extra-list.yaml)',
    );
    expect(grant).toContain('config/rbac/role.yaml grants (configmaps, deployments.apps, secrets) in every namespace');
    expect(grant).toContain('every Secret of the cluster');
    expect(remedy).toContain('--default-service-account');
    expect(remedy).toContain('serviceAccountName');
    expect(tenancySentences('plain', [], [])[0]).toContain('no value of plain is rendered with tpl');
  });

  it("names the watch's allowKinds, not the role's grants, when create api writes them", () => {
    const [, grant] = tenancySentences('web', [], ['configmaps', 'deployments.apps'], ['ConfigMap', 'Deployment.apps']);
    expect(grant).toContain(
      "objects of the kinds the watch's allowKinds lists (ConfigMap, Deployment.apps; the helm gateway refuses any other) in every namespace",
    );
    expect(grant).not.toContain('role.yaml grants');
  });
});
