/**
 * The TokenReview and SubjectAccessReview behind `--metrics-require-rbac` (telemetry/scrape-auth.ts
 * decides and caches; this only asks the API server). The operator's ServiceAccount needs `create`
 * on both (kubebuilder's `metrics-auth-role`).
 */
import { HttpMethod, type KubeConfig } from './client-node.js';
import { RawClient } from './raw-client.js';
import type { ScrapeReviewer, ScrapeUser } from '../telemetry/scrape-auth.js';

interface TokenReviewStatus {
  readonly authenticated?: boolean;
  readonly user?: {
    readonly username?: string;
    readonly uid?: string;
    readonly groups?: string[];
    readonly extra?: Record<string, string[]>;
  };
}

export class ApiScrapeReviewer implements ScrapeReviewer {
  readonly #raw: RawClient;

  constructor(kubeConfig: KubeConfig) {
    this.#raw = kubeConfig.makeApiClient(RawClient);
  }

  async authenticate(token: string): Promise<ScrapeUser | undefined> {
    const review = (await this.#raw.request(HttpMethod.POST, '/apis/authentication.k8s.io/v1/tokenreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    })) as { status?: TokenReviewStatus };
    const { authenticated, user } = review.status ?? {};
    if (authenticated !== true || user?.username === undefined) return undefined;
    return {
      username: user.username,
      groups: user.groups ?? [],
      ...(user.uid === undefined ? {} : { uid: user.uid }),
      ...(user.extra === undefined ? {} : { extra: user.extra }),
    };
  }

  async authorize(user: ScrapeUser, path: string, verb: string): Promise<boolean> {
    const review = (await this.#raw.request(HttpMethod.POST, '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb } },
      },
    })) as { status?: { allowed?: boolean } };
    return review.status?.allowed === true;
  }
}
