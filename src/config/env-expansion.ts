/** `$VAR` expansion of overrideValues, as operator-sdk does it (Go's `os.ExpandEnv`). */

const isShellSpecial = (c: string): boolean => '*#$@!?-0123456789'.includes(c);
const isNameChar = (c: string): boolean => /^[A-Za-z0-9_]$/.test(c);

/** Go's `getShellName`: the variable name after a `$`, and how many characters it spans. */
function shellName(s: string): { readonly name: string; readonly width: number } {
  if (s.startsWith('{')) {
    if (s.length > 2 && isShellSpecial(s.charAt(1)) && s.charAt(2) === '}') return { name: s.charAt(1), width: 3 };
    const close = s.indexOf('}');
    if (close === 1) return { name: '', width: 2 }; // "${}": bad syntax, eaten
    if (close < 0) return { name: '', width: 1 }; // "${" unclosed: bad syntax, "${" eaten
    return { name: s.slice(1, close), width: close + 1 };
  }
  if (s !== '' && isShellSpecial(s.charAt(0))) return { name: s.charAt(0), width: 1 };
  let i = 0;
  while (i < s.length && isNameChar(s.charAt(i))) i++;
  return { name: s.slice(0, i), width: i };
}

/**
 * `$VAR` and `${VAR}` expansion with exactly Go's `os.ExpandEnv` semantics, which operator-sdk
 * applies to overrideValues. Unset variables expand to "". Note that `$$` is NOT an escape in Go:
 * it is the special variable `$`, normally unset, so `$$` expands to "" (we keep that, so a
 * watches file means the same under both operators). A `$` not followed by a name stays as is.
 */
export function expandEnv(text: string, env: NodeJS.ProcessEnv): string {
  let out = '';
  let from = 0;
  for (let j = 0; j < text.length; j++) {
    if (text.charAt(j) !== '$' || j + 1 >= text.length) continue;
    out += text.slice(from, j);
    const { name, width } = shellName(text.slice(j + 1));
    if (name !== '') out += env[name] ?? '';
    else if (width === 0) out += '$';
    j += width;
    from = j + 1;
  }
  return out + text.slice(from);
}
