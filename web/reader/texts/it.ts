import { decimalComma } from './decimal.ts';
import type { Texts } from './en.ts';

/**
 * The reader page in Italian, formal (Lei), in the tone of the code emails (src/auth/mail/texts/it.ts).
 * Buttons say what they do in the infinitive ("Accedere"), sentences address the reader as Lei.
 */
export const it = {
  lang: 'it',
  appName: 'Sealpost',
  loading: 'Caricamento…',
  skipToContent: 'Vai al contenuto',
  language: 'Lingua',

  signIn: {
    title: 'Legga il suo messaggio sigillato',
    from: 'Da',
    subject: 'Oggetto',
    noSubject: '(nessun oggetto)',
    introSms:
      'Per leggerlo, confermi che è destinato a Lei: ' +
      'inserisca il suo indirizzo e-mail e il suo numero di cellulare. ' +
      'Le invieremo un codice monouso via SMS.',
    introEmail:
      'Per leggerlo, confermi che è destinato a Lei: inserisca il suo indirizzo e-mail. ' +
      'Le invieremo un codice monouso via e-mail.',
    introBoth:
      'Per leggerlo, confermi che è destinato a Lei: ' +
      'inserisca il suo indirizzo e-mail e, se il mittente lo conosce, il suo numero di cellulare. ' +
      'Le invieremo un codice monouso.',
    email: 'Indirizzo e-mail',
    emailHint: 'L’indirizzo a cui è stato inviato questo messaggio.',
    mobile: 'Numero di cellulare',
    mobileOptional: 'Numero di cellulare (se il mittente lo conosce)',
    mobileHint: 'In formato internazionale, per esempio +41 79 123 45 67.',
    send: 'Ricevere un codice',
    sending: 'Invio in corso…',
  },

  code: {
    title: 'Inserisca il codice',
    sentSms: (length: number, to: string) => `Le abbiamo inviato un codice di ${length} cifre via SMS al numero ${to}.`,
    sentEmail: (length: number, to: string) => `Le abbiamo inviato un codice di ${length} cifre via e-mail a ${to}.`,
    validFor: (duration: string) => `Il codice è valido per ${duration}.`,
    label: 'Codice',
    remember: 'Rimanere connesso su questo dispositivo',
    rememberHint: (duration: string) =>
      `Per ${duration}, o finché non si disconnette. Non selezioni questa casella su un computer condiviso.`,
    submit: 'Accedere',
    checking: 'Verifica in corso…',
    resend: 'Inviare un nuovo codice',
    resendIn: (duration: string) => `Potrà richiedere un nuovo codice fra ${duration}.`,
    resent: 'Un nuovo codice è in arrivo. Quello precedente non è più valido.',
    otherAddress: 'Usare un altro indirizzo',
    sentEarlierSms: (to: string, time: string) => `Le abbiamo inviato un codice via SMS al numero ${to} alle ${time}.`,
    sentEarlierEmail: (to: string, time: string) => `Le abbiamo inviato un codice via e-mail a ${to} alle ${time}.`,
    stillValidFor: (duration: string) => `È valido ancora per ${duration}.`,
    attemptsLeft: (n: number) => (n === 1 ? 'Le resta 1 tentativo.' : `Le restano ${n} tentativi.`),
  },

  message: {
    from: 'Da',
    to: 'A',
    cc: 'Cc',
    replyTo: 'Rispondere a',
    date: 'Data',
    noSubject: '(nessun oggetto)',
    sealedOn: (date: string, cid: string) => `Sigillato il ${date} — contenuto verificato con il CID IPFS ${cid}.`,
    sealTitle: 'Il sigillo è integro',
    sealExplain:
      'Questo messaggio è esattamente com’era quando è stato sigillato: ' +
      'la sua impronta (SHA-256) corrisponde alla copia sigillata.',
    sha256: 'SHA-256',
    bodyFrame: 'Testo del messaggio',
    noBody: 'Questo messaggio non contiene testo.',
    remoteImagesBlocked: (count: number) =>
      count === 1
        ? 'Un’immagine da Internet non viene mostrata, ' +
          'affinché il mittente non possa sapere quando Lei legge questo messaggio.'
        : `${count} immagini da Internet non vengono mostrate, ` +
          'affinché il mittente non possa sapere quando Lei legge questo messaggio.',
    showImages: 'Mostrare le immagini',
    attachments: 'Allegati',
    download: 'Scaricare',
    signOut: 'Disconnettersi',
    signingOut: 'Disconnessione in corso…',
    signOutFailed: 'È ancora connesso: la disconnessione non è riuscita.',
  },

  mobile: {
    title: 'Cambiare il numero di cellulare',
    explain:
      'I codici per questo messaggio vanno al suo numero di cellulare. ' +
      'Per cambiarlo, confermi un codice inviato al numero attuale e poi uno inviato al nuovo numero.',
    newNumber: 'Nuovo numero di cellulare',
    newNumberHint: 'In formato internazionale, per esempio +41 79 123 45 67.',
    start: 'Invia un codice al mio numero attuale',
    starting: 'Invio…',
    codeTo: (to: string) => `Inserisca il codice che abbiamo inviato al ${to}.`,
    code: 'Codice',
    confirm: 'Conferma',
    confirming: 'Verifica…',
    changed: (to: string) =>
      `Il suo numero di cellulare ora è ${to}. Il numero precedente e il suo indirizzo e-mail sono stati avvisati.`,
  },

  laterMobile: {
    title: 'Proteggere i prossimi messaggi via SMS',
    explain:
      'Ha effettuato l’accesso con un codice ricevuto via e-mail. Chi può leggere la sua casella potrebbe fare lo ' +
      'stesso. Aggiunga il suo numero di cellulare: i codici dei messaggi sigillati che questa organizzazione le ' +
      'invierà d’ora in poi arriveranno via SMS. Questo messaggio mantiene l’accesso via e-mail.',
    number: 'Numero di cellulare',
    numberHint: 'In formato internazionale, ad esempio +41 79 123 45 67.',
    start: 'Invia un codice a questo numero',
    starting: 'Invio…',
    codeTo: (to: string) => `Inserisca il codice inviato a ${to}.`,
    code: 'Codice',
    confirm: 'Aggiungi questo numero',
    confirming: 'Verifica…',
    added: (to: string) =>
      `Fatto: i codici dei suoi prossimi messaggi andranno a ${to}. Il suo indirizzo e-mail è stato avvisato.`,
  },

  others: {
    title: 'Gli altri suoi messaggi sigillati',
    explain: 'Può aprirli senza un altro codice.',
    meta: (sender: string, date: string) => `da ${sender}, sigillato il ${date}`,
  },

  list: {
    previous: 'Messaggi precedenti',
    next: 'Messaggi successivi',
    range: (from: number, to: number) => `Messaggi da ${from} a ${to}`,
    navigation: 'Pagine degli altri suoi messaggi',
  },

  reply: {
    title: 'Rispondere',
    to: (to: string) => `La sua risposta andrà a ${to}.`,
    text: 'La sua risposta',
    draftSaved: 'Bozza salvata. Può continuare più tardi, anche su un altro dispositivo.',
    draftSaving: 'Salvataggio della bozza…',
    draftRestored: 'La sua bozza non inviata è stata ripristinata.',
    draftFailed:
      'Non è stato possibile caricare la sua risposta salvata. ' +
      'Affinché non se ne perda nulla, potrà rispondere non appena sarà caricata.',
    retry: 'Riprovare',
    files: 'File allegati',
    addFiles: 'Allegare file',
    limits: (perFile: string, total: string) => `Fino a ${perFile} per file e ${total} in totale.`,
    used: (used: string, total: string) => `${used} di ${total} utilizzati.`,
    uploading: (name: string) => `Caricamento di ${name}`,
    uploaded: (name: string) => `${name} è allegato.`,
    remove: (name: string) => `Rimuovere ${name}`,
    removed: (name: string) => `${name} è stato rimosso.`,
    copyToMe: (email: string) => `Ricevere una copia (a ${email})`,
    send: 'Inviare la risposta',
    sending: 'Invio in corso…',
    empty: 'Scriva prima una risposta o alleghi un file.',
    waitForUploads: 'Attenda che i file siano caricati.',
  },

  drafts: {
    conflictTitle: 'Questa risposta è stata modificata anche in un’altra finestra',
    conflictExplain: 'Non si perde nulla. Scelga il testo da tenere; potrà ancora modificarlo prima dell’invio.',
    mine: 'Scritto in questa finestra',
    theirs: 'Salvato nell’altra finestra',
    keepMine: 'Tenere il testo di questa finestra',
    keepTheirs: 'Tenere il testo dell’altra finestra',
    keepBoth: 'Tenere entrambi i testi, uno dopo l’altro',
    chosen: 'Il testo scelto è nella sua risposta e viene salvato.',
    updated: 'Questa risposta è stata modificata in un’altra finestra; qui c’è ora il testo salvato lì.',
    checkAgain: 'Questa risposta è stata modificata in un’altra finestra. La controlli, poi la invii di nuovo.',
    alreadySentTitle: 'La sua risposta è già stata inviata',
    alreadySent: (time: string) => `La sua risposta è già stata inviata il ${time}.`,
    alreadySentExplain:
      'È stata inviata da un’altra finestra o da un altro dispositivo. Ciò che ha scritto qui non è stato inviato.',
    unsent: 'Scritto in questa finestra, non inviato',
    newReply: 'Iniziare una nuova risposta con questo testo',
    writeReply: 'Scrivere una nuova risposta',
    lastSent: (time: string) => `La sua ultima risposta a questo messaggio è stata inviata il ${time}.`,
  },

  sent: {
    title: 'La sua risposta è stata inviata',
    body: (to: string) => `La sua risposta è in viaggio verso ${to}.`,
    back: 'Tornare al messaggio',
  },

  signedOut: {
    title: 'Si è disconnesso',
    body:
      'La sua sessione su questo dispositivo è terminata. ' +
      'Per leggere di nuovo il messaggio, acceda con un nuovo codice.',
    again: 'Accedere di nuovo',
  },

  sessions: {
    signOutEverywhere: 'Disconnettersi ovunque',
    signingOutEverywhere: 'Disconnessione ovunque in corso…',
    signOutEverywhereFailed: 'È ancora connesso: la disconnessione ovunque non è riuscita.',
    signedOutEverywhere: {
      title: 'Si è disconnesso ovunque',
      body:
        'Tutte le sue sessioni sono terminate: su questo dispositivo, in altri browser e per gli altri suoi ' +
        'messaggi. Per leggere di nuovo un messaggio, acceda con un nuovo codice.',
    },
  },

  brokenSeal: {
    title: 'Il sigillo è rotto',
    body:
      'Questo messaggio non viene mostrato: il suo contenuto non corrisponde più a ciò che è stato sigillato. ' +
      'Potrebbe essere stato modificato dopo la sigillatura.',
    cid: (cid: string) => `Contenuto sigillato: CID IPFS ${cid}`,
    copy: (cluster: string, state: string) => `La copia su ${cluster}: ${state}`,
    copyStates: { damaged: 'danneggiata', missing: 'mancante', unreachable: 'non raggiungibile' },
    advice:
      'Non faccia affidamento su alcuna copia di questo messaggio. ' +
      'Avvisi il mittente e gli comunichi il riferimento qui sotto.',
  },

  ended: {
    withdrawnTitle: 'Questo messaggio è stato ritirato',
    expiredTitle: 'Questo messaggio è scaduto',
    withdrawnOn: (date: string) => `Questo messaggio è stato ritirato il ${date}.`,
    expiredOn: (date: string) => `Questo messaggio è scaduto il ${date}.`,
    gone: 'Il suo contenuto non è più disponibile: non può più essere letto né ricevere risposta.',
    ask: (contact: string) => `Si rivolga a ${contact} se ne ha bisogno.`,
    askSender: 'Si rivolga al mittente se ne ha bisogno.',
  },

  fatal: {
    title: 'Questo messaggio non può essere mostrato',
    badLink: 'Questo link non è completo. Apra di nuovo il link dalla sua e-mail.',
    retry: 'Riprovare',
  },

  sessionEnded: 'La sua sessione è scaduta. Acceda di nuovo.',

  units: {
    bytes: (n: number) => `${n} byte`,
    kb: (n: string) => `${decimalComma(n)} KB`,
    mb: (n: string) => `${decimalComma(n)} MB`,
    gb: (n: string) => `${decimalComma(n)} GB`,
    seconds: (n: number) => (n === 1 ? '1 secondo' : `${n} secondi`),
    minutes: (n: number) => (n === 1 ? '1 minuto' : `${n} minuti`),
    hours: (n: number) => (n === 1 ? '1 ora' : `${n} ore`),
    days: (n: number) => (n === 1 ? '1 giorno' : `${n} giorni`),
  },

  errors: {
    expired_code: 'Questo codice è scaduto. Richieda un nuovo codice e inserisca quello.',
    incorrect_code: 'Questo codice non è corretto. Controlli le cifre e riprovi — oppure richieda un nuovo codice.',
    invalid_code_or_email:
      'Questo codice non è corretto. ' +
      'Controlli le cifre nell’ultima e-mail che Le abbiamo inviato, oppure richieda un nuovo codice.',
    invalid_email: 'Inserisca un indirizzo e-mail completo, come nome@example.com.',
    invalid_mobile:
      'Inserisca il suo numero di cellulare in formato internazionale, ' +
      'iniziando con + e il prefisso del Paese, come +41 79 123 45 67.',
    invalid_bcc_address: 'L’indirizzo per la sua copia non è un indirizzo e-mail valido.',
    email_mismatch:
      'Una copia della risposta può andare solo al suo indirizzo, quello con cui ha effettuato l’accesso.',
    unauthorized_user:
      'Questo messaggio non è stato inviato a questo indirizzo o numero di cellulare. ' +
      'Li controlli, oppure chieda al mittente.',
    forbidden_auth_method:
      'Questo indirizzo accede in un altro modo. Verifichi se il mittente ha il suo numero di cellulare.',
    forbidden_file_type:
      'Questo tipo di file non può essere allegato (per esempio programmi e script). ' +
      'Alleghi invece un documento o un’immagine.',
    malware_detected: 'Questo file sembra contenere un virus, perciò non è stato allegato.',
    file_too_large: 'Questo file è troppo grande per essere allegato.',
    upload_limit_reached: 'Insieme ai file già allegati, questo file è troppo grande. Rimuova un file o ne invii meno.',
    new_mobile_conflict: 'Questo è già il suo numero di cellulare.',
    sms_rate_limit: 'Sono stati richiesti troppi codici. Attenda un momento prima di richiederne uno nuovo.',
    email_and_mobile_mismatch:
      'Questo indirizzo e-mail e questo numero di cellulare non corrispondono. Li controlli entrambi.',
    code_replaced:
      'Un codice più recente ha sostituito questo, che non vale più. Inserisca il codice dell’ultimo messaggio; ' +
      'nessun tentativo è stato usato.',
    code_attempts_exceeded:
      'Questo codice non può più essere usato: è stato inserito in modo errato troppe volte. Ne richieda uno nuovo.',
    message_withdrawn: 'Questo messaggio è stato ritirato dal mittente: non può più essere letto.',
    message_expired: 'Questo messaggio ha superato la data di scadenza: non può più essere letto.',
    mobile_required: 'Per proteggere questo messaggio serve un numero di cellulare.',
    seal_broken:
      'Il sigillo è rotto: ' +
      'questo messaggio non corrisponde più a ciò che è stato sigillato, perciò non viene mostrato.',
    validation_failed: 'Qualcosa nel modulo non è compilato correttamente. Lo controlli e riprovi.',
    not_found: 'Questo messaggio non esiste o non è più disponibile. Controlli il link, oppure chieda al mittente.',
    unauthenticated: 'La sua sessione è scaduta. Acceda di nuovo.',
    forbidden: 'Questa operazione non è consentita.',
    csrf_token_invalid: 'Questa pagina è rimasta aperta a lungo. La ricarichi e riprovi.',
    conflict: 'Nel frattempo qualcosa è cambiato. Ricarichi la pagina e riprovi.',
    draft_conflict:
      'Questa risposta è stata modificata in un’altra finestra o su un altro dispositivo. ' +
      'Deve essere ricaricata prima di poter essere modificata o inviata.',
    reply_already_sent: 'Questa risposta è già stata inviata da un’altra finestra o da un altro dispositivo.',
    payload_too_large: 'È troppo grande per essere inviato.',
    unavailable: 'Il servizio è occupato in questo momento. Riprovi fra un minuto.',
    upstream_failed: 'Il messaggio non può essere recuperato in questo momento. Riprovi fra qualche minuto.',
    internal: 'Qualcosa è andato storto da parte nostra. Riprovi più tardi.',
  },

  codeState: {
    waitForNew: (duration: string) =>
      `Un codice è appena stato inviato ed è ancora valido. Potrà richiederne uno nuovo tra ${duration}.`,
  },

  errorFallback: {
    network: 'Nessuna connessione al server. Controlli la sua connessione a Internet e riprovi.',
    status: (status: number) =>
      status >= 500 ? 'Qualcosa è andato storto da parte nostra. Riprovi più tardi.' : 'Non ha funzionato. Riprovi.',
    retryIn: (duration: string) => `Riprovi fra ${duration}.`,
    reference: (id: string) => `Riferimento: ${id}`,
  },

  methodHint: {
    needsMobile:
      'Per questo indirizzo il codice arriva via SMS. Inserisca il numero di cellulare che il mittente ha di Lei.',
    needsEmail: 'Per questo indirizzo il codice arriva via e-mail. Lasci vuoto il numero di cellulare.',
  },
} satisfies Texts;
