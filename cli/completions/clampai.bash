# bash completion for clampai (installed to share/bash-completion/completions/clampai).
# Keep in step with `clampai CMD --help`: tests/cli/cli_tests.cmake checks every option is here.

_clampai() {
  local cur prev
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}

  # The subcommand (and `trace`'s and `ledger`'s own subcommand) typed so far.
  local cmd="" sub="" i word
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    case $word in
      -*) ;;
      *)
        if [[ -z $cmd ]]; then
          cmd=$word
        elif [[ ($cmd == trace || $cmd == ledger) && -z $sub ]]; then
          sub=$word
        fi
        ;;
    esac
  done

  case $prev in
    --format)
      case $cmd in
        verify | compose) COMPREPLY=($(compgen -W "text json sarif junit" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "text json" -- "$cur")) ;;
      esac
      return
      ;;
    --flush) COMPREPLY=($(compgen -W "buffered flush fsync" -- "$cur")); return ;;
    --approvals)
      case $cmd in
        gateway) COMPREPLY=($(compgen -W "elicit deny skip" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "prompt deny skip" -- "$cur")) ;;
      esac
      return
      ;;
    --llm) COMPREPLY=($(compgen -W "mock anthropic openai" -- "$cur")); return ;;
    --engine) COMPREPLY=($(compgen -W "explicit symbolic" -- "$cur")); return ;;
    --norm) COMPREPLY=($(compgen -W "l1 l2" -- "$cur")); return ;;
    --mode) COMPREPLY=($(compgen -W "enforce shadow" -- "$cur")); return ;;
    --graph) COMPREPLY=($(compgen -W "dot" -- "$cur")); return ;;
    --layout) COMPREPLY=($(compgen -W "auto dot builtin" -- "$cur")); return ;;
    --html) COMPREPLY=($(compgen -f -X '!*.html' -- "$cur")); return ;;
    --cache | --smtlib) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --data-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --trace | --transcript | --state | --spec | --allow-program | --cache-key-file | --token-file | --principals | --tls-cert | --tls-key | --signing-key | --public-key | --decision-log) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --jobs | --timeout-ms | --timeout | --max-in-flight | --max-message-bytes | --upstream-timeout-ms | --env | --max-obligations | --depth | --max-steps | --llm-timeout-ms | --lookahead | --lookahead-timeout-ms | --seconds | --max-param-values | \
      --action | --params | --weights | --model | --base-url | --host | --port | --shadow)
      return
      ;;
  esac

  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "check evaluate run trace verify bench compose lookahead repair report agent serve mcp gateway keygen ledger --help --version" -- "$cur"))
    return
  fi
  local opts
  case $cmd in
    check) opts="--format --quiet --help" ;;
    evaluate) opts="--action --params --state --format --quiet --help" ;;
    run) opts="--trace --append --force --flush --max-steps --record-rejections --lookahead --lookahead-timeout-ms --recover --allow-program --ledger --pools --signing-key --checkpoint-every --approvals --shadow --format --quiet --help" ;;
    trace)
      if [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "verify --help" -- "$cur"))
        return
      fi
      opts="--spec --public-key --allow-unsealed --undo-depth --format --quiet --help"
      ;;
    verify) opts="--jobs --timeout-ms --timeout --fail-on-unknown --depth --smtlib --format --quiet --help" ;;
    bench) opts="--seconds --format --quiet --help" ;;
    compose) opts="--format --cache --cache-key-file --jobs --timeout-ms --timeout --max-obligations --fail-on-unknown --show-proved --graph --quiet --help" ;;
    lookahead) opts="--state --action --params --depth --max-param-values --engine --timeout-ms --format --quiet --help" ;;
    repair) opts="--state --action --params --norm --weights --timeout-ms --format --quiet --help" ;;
    report) opts="--html --spec --force --layout --help" ;;
    agent) opts="--llm --model --base-url --llm-timeout-ms --max-steps --trace --transcript --lookahead --allow-program --ledger --pools --approvals --signing-key --checkpoint-every --shadow --upstream --upstream-timeout-ms --clear-env --env --format --quiet --help" ;;
    serve) opts="--spec --host --port --token-file --principals --insecure-no-auth --data-dir --ledger --pools --tls-cert --tls-key --request-timeout-ms --threads --signing-key --checkpoint-every --decision-log --mode --shadow --help" ;;
    keygen) opts="--help" ;;
    ledger)
      if [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "pools --help" -- "$cur"))
        return
      fi
      opts="apply show --ledger --format --help"
      ;;
    mcp) opts="--shadow --help" ;;
    gateway) opts="--trace --ledger --max-in-flight --max-message-bytes --approvals --upstream-timeout-ms --clear-env --env --print-bindings --host --port --token-file --insecure-no-auth --tls-cert --tls-key --help" ;;
    *) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}

complete -o filenames -o bashdefault -F _clampai clampai
