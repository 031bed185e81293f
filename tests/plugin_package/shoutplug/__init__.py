"""An outside plug-in of recitation (docs/adding-a-method.md, "An outside plug-in")."""
