/** Input `generate bundle` cannot make a bundle of; the message says what to change. */
export class BundleInputError extends Error {
  override readonly name = 'BundleInputError';
}
