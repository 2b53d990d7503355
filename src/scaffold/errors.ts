/** Which scaffolding errors are the user's to fix (the CLI prints their message alone). */
import { HelmNotFoundError } from '../helm/locate.js';
import { ChartRenderError } from './chart-kinds.js';
import { ChartSourceError } from './chart-source.js';
import { UnsafeCrdUpdateError } from './chart-update.js';
import { CreateApiError } from './create-api.js';
import { InitError } from './init-project.js';
import { InvalidPlanError, MarkerNotFoundError, ScaffoldConflictError } from '../machinery/index.js';
import { InvalidNameError } from './names.js';
import { ProjectError } from '../machinery/project.js';
import { RuntimeSourceError } from './runtime-source.js';
import { InvalidValuesError } from './sample.js';

const USER_ERRORS = [
  ChartRenderError,
  ChartSourceError,
  CreateApiError,
  HelmNotFoundError,
  InitError,
  InvalidNameError,
  InvalidPlanError,
  InvalidValuesError,
  MarkerNotFoundError,
  ProjectError,
  RuntimeSourceError,
  ScaffoldConflictError,
  UnsafeCrdUpdateError,
];

export const isScaffoldUserError = (err: unknown): err is Error => USER_ERRORS.some((E) => err instanceof E);
