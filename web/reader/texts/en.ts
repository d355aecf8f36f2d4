import type { ErrorCode } from '../../../src/kernel/error-codes.ts';
import type { Language } from '../../../src/kernel/languages.ts';

/**
 * Every word the reader page shows, in English. The translations (de.ts, fr.ts, it.ts) are copies with
 * the same keys that `satisfy` the type taken from this file: TypeScript refuses one with a key missing
 * or one too many. Functions take the values they put into a sentence.
 */
export const en = {
  lang: 'en' as Language,
  appName: 'Sealpost',
  loading: 'Loading…',
  skipToContent: 'Skip to content',
  /** The label of the language switcher in the page header. */
  language: 'Language',

  signIn: {
    title: 'Read your sealed message',
    from: 'From',
    subject: 'Subject',
    noSubject: '(no subject)',
    introSms:
      'To read it, confirm that it is for you: enter your email address and your mobile number. ' +
      'We will send you a one-time code by SMS.',
    introEmail:
      'To read it, confirm that it is for you: enter your email address. We will send you a one-time code by email.',
    introBoth:
      'To read it, confirm that it is for you: ' +
      'enter your email address, and your mobile number if the sender has it. ' +
      'We will send you a one-time code.',
    email: 'Email address',
    emailHint: 'The address this message was sent to.',
    mobile: 'Mobile number',
    mobileOptional: 'Mobile number (if the sender has it)',
    mobileHint: 'In international format, for example +41 79 123 45 67.',
    send: 'Send me a code',
    sending: 'Sending…',
  },

  code: {
    title: 'Enter your code',
    sentSms: (length: number, to: string) => `We sent a ${length}-digit code by SMS to ${to}.`,
    sentEmail: (length: number, to: string) => `We sent a ${length}-digit code by email to ${to}.`,
    validFor: (duration: string) => `The code is valid for ${duration}.`,
    label: 'Code',
    remember: 'Keep me signed in on this device',
    rememberHint: (duration: string) =>
      `For ${duration}, or until you sign out. Do not tick this on a shared computer.`,
    submit: 'Sign in',
    checking: 'Checking…',
    resend: 'Send a new code',
    resendIn: (duration: string) => `You can ask for a new code in ${duration}.`,
    resent: 'A new code is on its way. The old one no longer works.',
    otherAddress: 'Use a different address',
    sentEarlierSms: (to: string, time: string) => `We sent you a code by SMS to ${to} at ${time}.`,
    sentEarlierEmail: (to: string, time: string) => `We sent you a code by email to ${to} at ${time}.`,
    stillValidFor: (duration: string) => `It is valid for ${duration} more.`,
    attemptsLeft: (n: number) => (n === 1 ? 'You have 1 try left.' : `You have ${n} tries left.`),
  },

  message: {
    from: 'From',
    to: 'To',
    cc: 'Cc',
    replyTo: 'Reply to',
    date: 'Date',
    noSubject: '(no subject)',
    sealedOn: (date: string, cid: string) => `Sealed on ${date} — content verified against IPFS CID ${cid}.`,
    sealTitle: 'The seal holds',
    sealExplain: 'This message is exactly as it was sealed: its fingerprint (SHA-256) matches the sealed copy.',
    sha256: 'SHA-256',
    bodyFrame: 'Message text',
    noBody: 'This message has no text.',
    remoteImagesBlocked: (count: number) =>
      count === 1
        ? 'One image from the internet is not shown, so that the sender cannot see when you read this.'
        : `${count} images from the internet are not shown, so that the sender cannot see when you read this.`,
    showImages: 'Show images',
    attachments: 'Attachments',
    /** Said before the file name to screen readers: the link's name is what it shows, with this first. */
    download: 'Download',
    signOut: 'Sign out',
    signingOut: 'Signing out…',
    signOutFailed: 'You are still signed in: signing out did not work.',
  },

  mobile: {
    title: 'Change your mobile number',
    explain:
      'Codes for this message go to your mobile number. ' +
      'To change it, confirm a code sent to your current number, then one sent to the new number.',
    newNumber: 'New mobile number',
    newNumberHint: 'In international format, for example +41 79 123 45 67.',
    start: 'Send a code to my current number',
    starting: 'Sending…',
    codeTo: (to: string) => `Enter the code we sent to ${to}.`,
    code: 'Code',
    confirm: 'Confirm',
    confirming: 'Checking…',
    changed: (to: string) => `Your mobile number is now ${to}. Your old number and your email address have been told.`,
  },

  laterMobile: {
    title: 'Protect your later messages by SMS',
    explain:
      'You signed in with a code sent to your email. Anyone who can read your mailbox could do the same. ' +
      'Add your mobile number: the codes for the sealed messages this organisation sends you from now on go to it ' +
      'by SMS. This message keeps signing in by email.',
    number: 'Mobile number',
    numberHint: 'In international format, for example +41 79 123 45 67.',
    start: 'Send a code to this number',
    starting: 'Sending…',
    codeTo: (to: string) => `Enter the code we sent to ${to}.`,
    code: 'Code',
    confirm: 'Add this number',
    confirming: 'Checking…',
    added: (to: string) => `Done: codes for your later messages will go to ${to}. Your email address has been told.`,
  },

  others: {
    title: 'Your other sealed messages',
    explain: 'You can open these without another code.',
    meta: (sender: string, date: string) => `from ${sender}, sealed ${date}`,
  },

  list: {
    previous: 'Previous messages',
    next: 'Next messages',
    range: (from: number, to: number) => `Messages ${from} to ${to}`,
    navigation: 'Pages of your other messages',
  },

  reply: {
    title: 'Reply',
    to: (to: string) => `Your reply goes to ${to}.`,
    text: 'Your reply',
    draftSaved: 'Draft saved. You can continue later, also on another device.',
    draftSaving: 'Saving draft…',
    draftRestored: 'Your unsent draft was restored.',
    draftFailed:
      'Your saved reply could not be loaded. So that nothing of it is lost, you can reply once it is loaded.',
    retry: 'Try again',
    files: 'Attached files',
    addFiles: 'Attach files',
    limits: (perFile: string, total: string) => `Up to ${perFile} per file and ${total} in total.`,
    used: (used: string, total: string) => `${used} of ${total} used.`,
    uploading: (name: string) => `Uploading ${name}`,
    uploaded: (name: string) => `${name} is attached.`,
    remove: (name: string) => `Remove ${name}`,
    removed: (name: string) => `${name} was removed.`,
    copyToMe: (email: string) => `Send me a copy (to ${email})`,
    send: 'Send reply',
    sending: 'Sending…',
    empty: 'Please write a reply or attach a file first.',
    waitForUploads: 'Please wait until the files are uploaded.',
  },

  drafts: {
    conflictTitle: 'This reply was also changed in another window',
    conflictExplain: 'Nothing is lost. Choose the text to keep; you can still edit it before sending.',
    mine: 'Typed in this window',
    theirs: 'Saved in the other window',
    keepMine: 'Keep the text from this window',
    keepTheirs: 'Keep the text from the other window',
    keepBoth: 'Keep both texts, one after the other',
    chosen: 'The text you chose is in your reply and is being saved.',
    updated: 'This reply was changed in another window; the text here is the one saved there.',
    checkAgain: 'This reply was changed in another window. Please check it, then send it again.',
    alreadySentTitle: 'Your reply was already sent',
    alreadySent: (time: string) => `Your reply was already sent at ${time}.`,
    alreadySentExplain: 'It was sent from another window or device. What you typed here was not sent.',
    unsent: 'Typed in this window, not sent',
    newReply: 'Start a new reply with this text',
    writeReply: 'Write a new reply',
    lastSent: (time: string) => `Your last reply to this message was sent at ${time}.`,
  },

  sent: {
    title: 'Your reply was sent',
    body: (to: string) => `Your reply is on its way to ${to}.`,
    back: 'Back to the message',
  },

  signedOut: {
    title: 'You are signed out',
    body: 'Your session on this device has ended. To read the message again, sign in with a new code.',
    again: 'Sign in again',
  },

  /** Sign out everywhere: every session of the reader's proven addresses, in every browser. */
  sessions: {
    signOutEverywhere: 'Sign out everywhere',
    signingOutEverywhere: 'Signing out everywhere…',
    signOutEverywhereFailed: 'You are still signed in: signing out everywhere did not work.',
    signedOutEverywhere: {
      title: 'You are signed out everywhere',
      body:
        'All your sessions have ended: on this device, in other browsers and for your other messages. ' +
        'To read a message again, sign in with a new code.',
    },
  },

  brokenSeal: {
    title: 'The seal is broken',
    body:
      'This message is not shown: its content no longer matches what was sealed. ' +
      'It may have been changed after it was sealed.',
    cid: (cid: string) => `Sealed content: IPFS CID ${cid}`,
    copy: (cluster: string, state: string) => `The copy on ${cluster}: ${state}`,
    copyStates: { damaged: 'damaged', missing: 'missing', unreachable: 'could not be reached' },
    advice: 'Please do not rely on any copy of this message. Tell the sender, and give them the reference below.',
  },

  /** A message that ended (docs/specification.md#end-dates): final, with the date in the reader's language. */
  ended: {
    withdrawnTitle: 'This message was withdrawn',
    expiredTitle: 'This message has expired',
    withdrawnOn: (date: string) => `This message was withdrawn on ${date}.`,
    expiredOn: (date: string) => `This message expired on ${date}.`,
    gone: 'Its content is no longer available: it cannot be read or answered any more.',
    ask: (contact: string) => `Ask ${contact} if you need it.`,
    askSender: 'Ask its sender if you need it.',
  },

  fatal: {
    title: 'This message cannot be shown',
    badLink: 'This link is not complete. Please open the link from your email again.',
    retry: 'Try again',
  },

  sessionEnded: 'Your session has ended. Please sign in again.',

  units: {
    bytes: (n: number) => `${n} bytes`,
    kb: (n: string) => `${n} KB`,
    mb: (n: string) => `${n} MB`,
    gb: (n: string) => `${n} GB`,
    seconds: (n: number) => (n === 1 ? '1 second' : `${n} seconds`),
    minutes: (n: number) => (n === 1 ? '1 minute' : `${n} minutes`),
    hours: (n: number) => (n === 1 ? '1 hour' : `${n} hours`),
    days: (n: number) => (n === 1 ? '1 day' : `${n} days`),
  },

  /**
   * One helpful sentence per errorCode (docs/specification.md#error-codes: the auth service's codes and the
   * generic ones). The page never shows the server's `message`: it is for logs, in English, and may be
   * technical.
   */
  errors: {
    expired_code: 'This code has expired. Please ask for a new code and enter that one.',
    incorrect_code: 'That code is not right. Please check the digits and try again — or ask for a new code.',
    invalid_code_or_email:
      'That code is not right. Please check the digits in the newest email we sent you, or ask for a new code.',
    invalid_email: 'Please enter a complete email address, like name@example.com.',
    invalid_mobile:
      'Please enter your mobile number in international format, ' +
      'starting with + and the country code, like +41 79 123 45 67.',
    invalid_bcc_address: 'The address for your copy is not a valid email address.',
    email_mismatch: 'A copy of the reply can only go to your own address, the one you signed in with.',
    unauthorized_user:
      'This message was not sent to this address or mobile number. Please check them, or ask the sender.',
    forbidden_auth_method: 'This address signs in another way. Please check whether the sender has your mobile number.',
    forbidden_file_type:
      'This kind of file cannot be attached (for example programs and scripts). ' +
      'Please attach a document or picture instead.',
    malware_detected: 'This file seems to contain a virus, so it was not attached.',
    file_too_large: 'This file is too large to attach.',
    upload_limit_reached:
      'Together with the files already attached, this file is too large. Remove a file or send fewer.',
    new_mobile_conflict: 'This is already your mobile number.',
    sms_rate_limit: 'Too many codes were asked for. Please wait a little before asking for a new one.',
    email_and_mobile_mismatch: 'This email address and mobile number do not belong together. Please check both.',
    code_replaced:
      'A newer code replaced this one, so it no longer works. Please enter the code from the latest message; ' +
      'no try was used.',
    code_attempts_exceeded:
      'This code can no longer be used: it was entered wrongly too many times. Please request a new one.',
    message_withdrawn: 'This message was withdrawn by its sender: it can no longer be read.',
    message_expired: 'This message has passed its end date: it can no longer be read.',
    mobile_required: 'A mobile number is needed to protect this message.',
    seal_broken: 'The seal is broken: this message no longer matches what was sealed, so it is not shown.',
    validation_failed: 'Something in the form is not filled in correctly. Please check it and try again.',
    not_found: 'This message does not exist or is no longer available. Please check the link, or ask the sender.',
    unauthenticated: 'Your session has ended. Please sign in again.',
    forbidden: 'This is not allowed.',
    csrf_token_invalid: 'This page was open for a long time. Please reload it and try again.',
    conflict: 'Something changed in the meantime. Please reload the page and try again.',
    draft_conflict:
      'This reply was changed in another window or on another device. ' +
      'It has to be loaded again before it can be changed or sent.',
    reply_already_sent: 'This reply was already sent from another window or device.',
    payload_too_large: 'This is too large to send.',
    unavailable: 'The service is busy right now. Please try again in a minute.',
    upstream_failed: 'The message cannot be fetched right now. Please try again in a few minutes.',
    internal: 'Something went wrong on our side. Please try again later.',
  } satisfies Record<ErrorCode, string>,

  /** For answers without a known errorCode, by situation. */
  /** Said where the code was asked for (sign-in, code and mobile-change screens). */
  codeState: {
    waitForNew: (duration: string) =>
      `A code was sent a moment ago and still works. You can ask for a new one in ${duration}.`,
  },

  errorFallback: {
    network: 'No connection to the server. Please check your internet connection and try again.',
    status: (status: number): string =>
      status >= 500
        ? 'Something went wrong on our side. Please try again later.'
        : 'That did not work. Please try again.',
    retryIn: (duration: string) => `Please try again in ${duration}.`,
    reference: (id: string) => `Reference: ${id}`,
  },

  /** forbidden_auth_method, made precise by what the reader tried. */
  methodHint: {
    needsMobile: 'For this address, the code comes by SMS. Please enter the mobile number the sender has for you.',
    needsEmail: 'For this address, the code comes by email. Please leave the mobile number empty.',
  },
};

export type Texts = typeof en;
