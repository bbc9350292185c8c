package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// completionCommand prints a shell completion script. The shell then asks
// `tollgate ... --generate-bash-completion` for the words that fit.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "SHELL",
		Description: "Load it in the current shell, or install it once:\n\n" +
			"   source <(tollgate completion bash)        # bash\n" +
			"   tollgate completion zsh > \"${fpath[1]}/_tollgate\"   # zsh\n" +
			"   tollgate completion fish > ~/.config/fish/completions/tollgate.fish",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("completion: name one shell: bash, zsh or fish")
			}
			switch shell := c.Args().First(); shell {
			case "bash":
				_, err := fmt.Fprint(c.App.Writer, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(c.App.Writer, zshCompletion)
				return err
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(c.App.Writer, s)
				return err
			default:
				return fmt.Errorf("completion: unknown shell %q (want bash, zsh or fish)", shell)
			}
		},
	}
}

// The scripts urfave/cli ships (autocomplete/), for the tollgate command.
const bashCompletion = `# bash completion for tollgate: source <(tollgate completion bash)
_tollgate_complete() {
  local cur words
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=("${COMP_WORDS[@]:0:$COMP_CWORD}")
  if [[ "$cur" == "-"* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _tollgate_complete tollgate
`

const zshCompletion = `#compdef tollgate
# zsh completion for tollgate: tollgate completion zsh > "${fpath[1]}/_tollgate"
_tollgate() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _tollgate tollgate
`
