// libmime ships no types: the one method Sealpost uses (rules/criteria.ts), as its source declares it.
declare module 'libmime' {
  const libmime: {
    /** Decodes RFC 2047 encoded words (any charset libmime knows) in a header value. */
    decodeWords(value: string): string;
  };
  export default libmime;
}
