package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// adminUserCommands are `tollgate admin user ...`: the people who sign into
// the console (/admin/v1/accounts/{id}/users).
func adminUserCommands() []*cli.Command {
	role := &cli.StringFlag{Name: "role", Value: "owner", Usage: "owner (everything), member (own keys and calls) or admin (a member who also runs the agents)"}
	return []*cli.Command{{
		Name:    "user",
		Aliases: []string{"users"},
		Usage:   "add people to an account for the console, list them, remove them, invite them",
		Subcommands: []*cli.Command{
			{
				Name: "create", Usage: "add a person to an existing account; without --password-stdin a password is made and printed once",
				ArgsUsage: "ACCOUNT_ID",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "email", Usage: "the address they sign in with (required)"},
					role,
					&cli.BoolFlag{Name: "password-stdin", Usage: "read the password from the first line of standard input"},
				},
				Action: adminUserCreate,
			},
			{Name: "list", Usage: "list an account's people", ArgsUsage: "ACCOUNT_ID", Action: adminUserList},
			{Name: "delete", Usage: "remove a person (their sessions end; their keys stay with the account)", ArgsUsage: "USER_ID", Action: adminUserDelete},
			{
				Name: "invite", Usage: "make an invitation link to an account (needs accounts { signup } true or \"invite\")", ArgsUsage: "ACCOUNT_ID",
				Flags:  []cli.Flag{role, &cli.StringFlag{Name: "email", Usage: "only this address may accept it"}},
				Action: adminUserInvite,
			},
		},
	}}
}

type adminUser struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

func adminUserCreate(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.String("email")) == "" {
		return errors.New("user create: --email is required")
	}
	password, made := "", false
	if c.Bool("password-stdin") {
		line, err := bufio.NewReader(c.App.Reader).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("user create: reading the password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	} else {
		b := make([]byte, 15)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		password, made = base64.RawURLEncoding.EncodeToString(b), true
	}
	var u adminUser
	return adminCall(c, http.MethodPost, "/accounts/"+id+"/users",
		map[string]any{"email": c.String("email"), "password": password, "role": c.String("role")}, &u,
		func(w io.Writer) {
			adminLines(w, "id", u.ID, "account_id", u.AccountID, "email", u.Email, "role", u.Role)
			if made {
				fmt.Fprintf(w, "\nTheir password, shown once: %s\nThey sign in at %s/console/ and can change it on their account page.\n",
					password, strings.TrimRight(global(c, "url"), "/"))
			}
		})
}

func adminUserList(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	var list struct{ Data []adminUser }
	return adminCall(c, http.MethodGet, "/accounts/"+id+"/users", nil, &list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tEMAIL\tROLE\tCREATED")
		for _, u := range list.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Role, adminStamp(u.CreatedAt))
		}
		_ = tw.Flush()
	})
}

func adminUserDelete(c *cli.Context) error {
	c, id, err := adminWithID(c, "USER_ID")
	if err != nil {
		return err
	}
	return adminCall(c, http.MethodDelete, "/users/"+id, nil, nil, func(w io.Writer) { fmt.Fprintf(w, "user %s removed\n", id) })
}

func adminUserInvite(c *cli.Context) error {
	c, id, err := adminWithID(c, "ACCOUNT_ID")
	if err != nil {
		return err
	}
	var inv struct {
		ID        string    `json:"id"`
		Role      string    `json:"role"`
		Path      string    `json:"path"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	body := map[string]any{"role": c.String("role")}
	if e := c.String("email"); e != "" {
		body["email"] = e
	}
	return adminCall(c, http.MethodPost, "/accounts/"+id+"/invitations", body, &inv, func(w io.Writer) {
		fmt.Fprintf(w, "Invitation (%s), shown once, until %s:\n\n    %s%s\n", inv.Role, adminStamp(inv.ExpiresAt),
			strings.TrimRight(global(c, "url"), "/"), inv.Path)
	})
}
