/** OperatorGroup target namespaces from operator-sdk's `--install-mode InstallModeType[=ns1,ns2]` (pure). */
import { OlmError } from './errors.js';

export type InstallModeType = 'AllNamespaces' | 'OwnNamespace' | 'SingleNamespace' | 'MultiNamespace';
const TYPES: readonly InstallModeType[] = ['AllNamespaces', 'OwnNamespace', 'SingleNamespace', 'MultiNamespace'];

export interface InstallMode {
  readonly type: InstallModeType;
  /** Undefined: every namespace (an OperatorGroup without targetNamespaces). */
  readonly targetNamespaces?: readonly string[];
}

export function parseInstallMode(flag: string, namespace: string): InstallMode {
  const [type, list] = flag.split('=', 2) as [string, string | undefined];
  if (!(TYPES as readonly string[]).includes(type))
    throw new OlmError(`--install-mode ${flag}: the type must be one of ${TYPES.join(', ')}`);
  const namespaces = (list ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  switch (type as InstallModeType) {
    case 'AllNamespaces':
    case 'OwnNamespace':
      if (namespaces.length > 0) throw new OlmError(`--install-mode ${flag}: ${type} takes no namespaces`);
      return type === 'AllNamespaces' ? { type: 'AllNamespaces' } : { type: 'OwnNamespace', targetNamespaces: [namespace] };
    case 'SingleNamespace':
      if (namespaces.length !== 1 || namespaces[0] === namespace)
        throw new OlmError(
          `--install-mode ${flag}: SingleNamespace=<ns> names one namespace other than the install namespace ${namespace} (that is OwnNamespace)`,
        );
      return { type: 'SingleNamespace', targetNamespaces: namespaces };
    case 'MultiNamespace':
      if (namespaces.length < 2)
        throw new OlmError(`--install-mode ${flag}: MultiNamespace=<ns1>,<ns2>[,...] names two or more namespaces`);
      return { type: 'MultiNamespace', targetNamespaces: namespaces };
  }
}

/** What the CSV supports decides: the flag's mode when given, else AllNamespaces, else OwnNamespace (operator-sdk's default). */
export function chooseInstallMode(
  supported: readonly { type: string; supported: boolean }[],
  namespace: string,
  flag?: string,
): InstallMode {
  const ok = new Set(supported.filter((m) => m.supported).map((m) => m.type));
  const mode =
    flag !== undefined
      ? parseInstallMode(flag, namespace)
      : ok.has('AllNamespaces')
        ? { type: 'AllNamespaces' as const }
        : { type: 'OwnNamespace' as const, targetNamespaces: [namespace] };
  if (!ok.has(mode.type))
    throw new OlmError(
      `the bundle's ClusterServiceVersion does not support install mode ${mode.type} (it supports: ${[...ok].join(', ') || 'none'})${flag === undefined ? '; choose one with --install-mode' : ''}`,
    );
  return mode;
}
