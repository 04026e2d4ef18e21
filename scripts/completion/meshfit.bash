# bash completion for meshfit: subcommands, each subcommand's flags (read from its --help), and
# the bundled presets for --model and --device.
_meshfit() {
  local cur prev cmd
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  cmd="${COMP_WORDS[1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "search estimate explain export check sweep merge validate show models devices --help --version" -- "$cur"))
    return
  fi
  case "$prev" in
    --model)
      COMPREPLY=($(compgen -W "$(meshfit models 2>/dev/null | awk 'NR > 1 { print $1 }')" -- "$cur"))
      compopt -o default 2>/dev/null
      return ;;
    --device)
      COMPREPLY=($(compgen -W "$(meshfit devices 2>/dev/null | awk 'NR > 1 { print $1 }')" -- "$cur"))
      compopt -o default 2>/dev/null
      return ;;
    --format)
      COMPREPLY=($(compgen -W "table json csv" -- "$cur")); return ;;
    --framework|--target)
      COMPREPLY=($(compgen -W "megatron torchtitan deepspeed" -- "$cur")); return ;;
    --export-best|--to)
      COMPREPLY=($(compgen -W "megatron torchtitan deepspeed hyperparallel" -- "$cur")); return ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(meshfit "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur"))
    return
  fi
  compopt -o default 2>/dev/null
  COMPREPLY=()
}
complete -F _meshfit meshfit
