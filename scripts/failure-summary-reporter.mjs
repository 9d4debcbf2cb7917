// A node:test reporter that prints nothing until the run ends, then every failed test again — its file,
// its name, and its error's message — under "# failed tests", so the end of a long log (what CI keeps of
// it) says what failed without a search through 1,800 results. scripts/test.mjs runs it beside the usual
// reporter. Suites failed only because a test in them failed are left out (their test is listed).

/** The message of a failed test's error: node:test wraps the thrown error as `cause`. */
function messageOf(error) {
  const cause = error?.cause ?? error;
  if (cause === undefined || cause === null) return 'no error';
  const text = typeof cause === 'object' && 'message' in cause ? String(cause.message) : String(cause);
  return text.split('\n').slice(0, 40).join('\n');
}

export default async function* failureSummary(source) {
  const failures = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    if (details?.error?.failureType === 'subtestsFailed') continue;
    failures.push({ name, file, message: messageOf(details?.error) });
  }
  if (failures.length === 0) return;
  const lines = [`# failed tests: ${failures.length}`];
  for (const { name, file, message } of failures) {
    lines.push(`# ✗ ${file ?? '?'}: ${name}`);
    for (const line of message.split('\n')) lines.push(`#     ${line}`);
  }
  yield `${lines.join('\n')}\n`;
}
