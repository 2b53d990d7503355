/**
 * The authoring commands' machinery (kubebuilder's pkg/machinery): plans as data (generators are
 * pure), one idempotent writer. scaffold and bundle both build on it; it imports neither.
 */
export { create, insert, markerText } from './plan.js';
export type { CreateOp, FileOp, IfExists, InsertOp, Plan } from './plan.js';
export { insertAtMarker, MarkerNotFoundError, upsertFramedAtMarker } from './markers.js';
export { applyPlan, formatPlan, formatResults, InvalidPlanError, ScaffoldConflictError } from './apply.js';
export type { Action, ApplyOptions, FileResult } from './apply.js';
export { readState, sha256, STATE_FILE } from './state.js';
export type { ScaffoldState } from './state.js';
