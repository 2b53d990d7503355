import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';

export interface DenyRule {
  /** Core-group resources the policy matches, e.g. `configmaps`. */
  readonly resources: readonly string[];
  readonly operations: readonly ('CREATE' | 'UPDATE' | 'DELETE')[];
  /** CEL: what is allowed; a request for which it is false is denied with `message`. */
  readonly expression: string;
  readonly message: string;
}

export interface DenyingPolicy {
  /** Stops enforcing (the binding goes, the policy stays until remove). */
  unbind(): Promise<void>;
  remove(): Promise<void>;
}

/**
 * A ValidatingAdmissionPolicy and its binding that deny, in one namespace, the requests `rule`
 * rejects: how tests make the API server refuse what the operator writes. The API server
 * enforces it a moment after it is created: wait for a refusal, not for the create.
 */
export async function denyInNamespace(kc: KubeConfig, namespace: string, name: string, rule: DenyRule): Promise<DenyingPolicy> {
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: [...rule.operations], resources: [...rule.resources] }],
        },
        validations: [{ expression: rule.expression, message: rule.message }],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } },
      },
    },
  });
  const unbind = async (): Promise<void> => {
    await admission.deleteValidatingAdmissionPolicyBinding({ name }).catch(() => undefined);
  };
  return {
    unbind,
    remove: async () => {
      await unbind();
      await admission.deleteValidatingAdmissionPolicy({ name }).catch(() => undefined);
    },
  };
}
