// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

// Values from client-node's index load every generated API and model (+85 MiB RSS): the operator
// takes them from src/k8s/client-node.ts (types are erased, so they may stay).
const clientNodeValues = {
  name: '@kubernetes/client-node',
  message: 'import values from src/k8s/client-node.ts (see its comment)',
  allowTypeImports: true,
};
// helm reads charts, values and manifests as YAML 1.1 (`0400` is 256, `yes` is true); the `yaml`
// package's parsers default to YAML 1.2 and silently disagree with what helm sent.
const defaultYamlParser = {
  name: 'yaml',
  importNames: ['default', 'parse', 'parseDocument', 'parseAllDocuments', 'Document', 'Composer', 'Parser'],
  message:
    'charts, values files and manifests are read as helm reads them: use src/config/helm-yaml.ts (docs/adr/0028-yaml-as-helm-reads-it.md)',
};
const HELM_YAML_READERS = ['src/reconciler/**/*.ts', 'src/operator/**/*.ts'];
const SCAFFOLD_HELM_YAML_READERS = [
  'src/scaffold/create-api.ts',
  'src/scaffold/sample.ts',
  'src/scaffold/chart-kinds.ts',
  'src/scaffold/chart-source.ts',
];

export default tseslint.config(
  // hack/need-node.mjs stays plain JavaScript that any Node runs (it checks the version), outside the TypeScript project.
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'helm-charts/', 'config/', '.cache/', 'hack/need-node.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Units stay small and readable (the limits pepr uses).
      complexity: ['error', 12],
      'max-depth': ['error', 3],
      'max-params': ['error', 4],
      'max-nested-callbacks': ['error', 4],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // client-node models are generated classes that the API treats as plain data; object
      // literals are how its own docs and tests build them.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/scaffold/**', ...HELM_YAML_READERS],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [clientNodeValues] }] },
  },
  {
    // A later block replaces a rule's options, so these repeat the client-node restriction.
    files: HELM_YAML_READERS,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [clientNodeValues, defaultYamlParser] }] },
  },
  {
    files: SCAFFOLD_HELM_YAML_READERS,
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [defaultYamlParser] }] },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/explicit-function-return-type': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'max-nested-callbacks': ['error', 8],
    },
  },
  { files: ['eslint.config.js', '.dependency-cruiser.mjs'], ...tseslint.configs.disableTypeChecked },
  // Plain JavaScript: its types are JSDoc, which that rule does not read.
  { files: ['.dependency-cruiser.mjs'], rules: { '@typescript-eslint/explicit-function-return-type': 'off' } },
);
