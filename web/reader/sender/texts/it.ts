import { it as reader } from '../../texts/it.ts';
import type { SenderTexts } from './en.ts';

/** The sender's page in Italian (Lei), as the reader page. */
export const it = {
  lang: 'it',
  appName: 'Sealpost',
  loading: 'Caricamento…',
  skipToContent: 'Vai al contenuto',
  language: 'Lingua',

  signIn: {
    title: 'I Suoi messaggi sigillati',
    intro:
      'Veda chi ha ricevuto e letto i messaggi che ha sigillato, li ritiri o ne cambi la data di scadenza. ' +
      'Acceda con un codice monouso inviato al Suo indirizzo e-mail.',
    email: 'Il Suo indirizzo e-mail',
    emailHint: "L'indirizzo da cui invia messaggi sigillati.",
    send: 'Inviatemi un codice',
    sending: 'Invio…',
  },

  code: {
    title: 'Inserisca il codice',
    sent: (length: number, to: string) =>
      `Se ${to} può accedere qui, vi abbiamo inviato un codice di ${length} cifre per e-mail.`,
    validFor: (duration: string) => `Il codice è valido per ${duration}.`,
    label: 'Codice',
    submit: 'Accedi',
    checking: 'Verifica…',
    resend: 'Invia un nuovo codice',
    resendIn: (duration: string) => `Potrà chiedere un nuovo codice tra ${duration}.`,
    resent: 'Un nuovo codice è in arrivo. Quello vecchio non funziona più.',
    otherAddress: 'Usa un altro indirizzo',
    attemptsLeft: (n: number) => (n === 1 ? 'Le resta 1 tentativo.' : `Le restano ${n} tentativi.`),
    newCode: 'Inviatemi un nuovo codice',
  },

  list: {
    title: 'I Suoi messaggi sigillati',
    signedInAs: (sender: string) => `Accesso effettuato come ${sender}.`,
    search: 'Cerca per destinatario o oggetto',
    searchButton: 'Cerca',
    showAll: 'Mostra tutti',
    noSubject: '(senza oggetto)',
    none: 'Non ha ancora sigillato nessun messaggio.',
    noMatch: (query: string) => `Nessun messaggio corrisponde a «${query}».`,
    results: (n: number) => (n === 1 ? '1 messaggio mostrato.' : `${n} messaggi mostrati.`),
    sealedOn: (date: string) => `Sigillato il ${date}`,
    recipients: (n: number) => (n === 1 ? '1 destinatario' : `${n} destinatari`),
    ended: 'Terminato',
    older: 'Mostra i messaggi meno recenti',
    loadingOlder: 'Caricamento…',
  },

  detail: {
    back: "Torna all'elenco",
    noSubject: '(senza oggetto)',
    sealed: 'Sigillato',
    endDate: 'Data di scadenza',
    noEndDate: 'Nessuna: resta leggibile finché non viene ritirato.',
    withdrawnOn: (date: string) => `Ritirato per tutti il ${date}.`,
    expiredOn: (date: string) => `Scaduto il ${date}.`,
    recipients: 'Destinatari',
    signIn: 'Accesso',
    signInEmail: 'Con un codice via e-mail (nessun numero di cellulare)',
    signInSms: {
      header: 'Via SMS, al numero indicato nel messaggio',
      confirmed: 'Via SMS, al numero confermato dal destinatario',
      directory: 'Via SMS, al numero della rubrica dei contatti',
    },
    notified: 'Notificato',
    firstOpened: 'Prima apertura',
    lastOpened: 'Ultima apertura',
    failedSignIns: 'Accessi non riusciti',
    downloads: 'Allegati scaricati',
    replies: 'Risposte inviate',
    withdrawn: 'Ritirato',
    not: 'Non ancora',
    never: 'Mai',
    trail: 'Registro',
    trailExplain: "Ogni evento di questo messaggio, con l'ora e l'indirizzo mascherato del dispositivo, in un file.",
    trailCsv: 'Scarica il registro in CSV',
    trailJson: 'Scarica il registro in JSON',
  },

  withdraw: {
    title: 'Ritirare',
    everyone: 'Ritira per tutti',
    one: (email: string) => `Ritira per ${email}`,
    confirmEveryone: 'Ritirare questo messaggio per tutti i destinatari? Nessuno potrà più leggerlo o rispondere.',
    confirmOne: (email: string) => `Ritirare questo messaggio per ${email}? Non potrà più leggerlo o rispondere.`,
    reason: 'Motivo',
    reasonHint: 'Conservato nel registro; lo vedono solo Lei e i gestori.',
    confirm: 'Sì, ritira',
    confirmOneButton: (email: string) => `Sì, ritira per ${email}`,
    cancel: 'Annulla',
    working: 'Ritiro…',
    needReason: 'Indichi un motivo.',
    doneEveryone: 'Il messaggio è stato ritirato per tutti.',
    doneOne: (email: string) => `Il messaggio è stato ritirato per ${email}.`,
  },

  endDate: {
    title: 'Cambiare la data di scadenza',
    explain: 'Dopo questa data e ora il messaggio non può più essere letto e il suo contenuto viene cancellato.',
    label: 'Nuova data e ora di scadenza',
    hint: (zone: string) => `Nel Suo fuso orario (${zone}).`,
    save: 'Salva la data di scadenza',
    saving: 'Salvataggio…',
    saved: (date: string) => `Il messaggio ora scade il ${date}.`,
    invalid: 'Inserisca una data e un’ora.',
    refused: 'La data di scadenza non è stata accettata.',
    serverSaid: (message: string) => `Il servizio riporta: ${message}`,
  },

  signOut: 'Esci',
  signingOut: 'Uscita…',
  signOutFailed: "È ancora connesso: l'uscita non ha funzionato.",

  signedOut: {
    title: 'È uscito',
    body: 'La Sua sessione su questo dispositivo è terminata.',
    again: 'Accedi di nuovo',
  },

  fatal: {
    title: 'Questa pagina non può essere mostrata',
    retry: 'Riprova',
  },

  sessionEnded: 'La Sua sessione è terminata. Acceda di nuovo.',

  units: reader.units,
  errors: {
    ...reader.errors,
    invalid_code_or_email:
      'Il codice non è corretto. Controlli le cifre nell’ultima e-mail che Le abbiamo inviato, ' +
      'o chieda un nuovo codice.',
    unauthorized_user: "Questo indirizzo non può accedere qui. Usi l'indirizzo da cui invia messaggi sigillati.",
    not_found: 'Questo messaggio non esiste, o non è stato inviato dal Suo indirizzo.',
    message_withdrawn: 'Questo messaggio è stato ritirato: non può più essere modificato.',
    message_expired: 'Questo messaggio ha superato la data di scadenza: non può più essere modificato.',
    mobile_required: 'Un destinatario non ha un numero di cellulare, e questa organizzazione lo richiede.',
  },
  errorFallback: reader.errorFallback,
} satisfies SenderTexts;
