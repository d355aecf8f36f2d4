/** formatBytes writes "1.5" (toFixed); German, French and Italian write "1,5". */
export function decimalComma(n: string): string {
  return n.replace('.', ',');
}
