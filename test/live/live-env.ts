/** Live suites run only against real engines: a missing variable is a setup error, never a skip. */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: run the live suites with \`npm run test:live\` (scripts/engines.sh starts the engines)`,
    );
  }
  return value;
}
