import { ConfigError } from './config.ts';

/**
 * A listen that failed, told in the words of the configuration: `<the port's variable>=8081: the port is in use`
 * rather than Node's `listen EADDRINUSE: address already in use 127.0.0.1:8081`, so that the operator
 * knows which variable to change. Errors that are not about the address pass through unchanged.
 */
export function listenError(
  error: unknown,
  where: { portVariable: string; port: number; host: string; hostVariable?: string },
): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const port = `${where.portVariable}=${where.port}`;
  const host = `${where.hostVariable ?? 'HOST'}=${where.host}`;
  switch (code) {
    case 'EADDRINUSE':
      return new ConfigError(
        [`${port}: the port is in use on ${where.host} (another Sealpost, or another program); choose another port`],
        { cause: error },
      );
    case 'EACCES':
      return new ConfigError(
        [`${port}: not allowed to listen on this port (ports below 1024 need privileges); choose a port from 1024 up`],
        { cause: error },
      );
    case 'EADDRNOTAVAIL':
      return new ConfigError([`${host}: this machine has no such address to listen on`], { cause: error });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ConfigError([`${host}: the name does not resolve to an address of this machine`], { cause: error });
    default:
      return error;
  }
}
