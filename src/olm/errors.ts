/** OLM commands' errors a user fixes (install OLM first, a bundle path, a flag): printed as one message. */
export class OlmError extends Error {
  override readonly name = 'OlmError';
}
