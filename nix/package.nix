# mur from Cargo.lock, with nixpkgs' Rust. Called by ../flake.nix.
{ lib, rustPlatform }:
let
  # Name and version come from Cargo.toml, so they cannot drift apart
  # (scripts/nix-check.sh checks the evaluated values anyway).
  cargoToml = lib.importTOML ../Cargo.toml;
in
rustPlatform.buildRustPackage {
  pname = cargoToml.package.name;
  inherit (cargoToml.package) version;

  # Only what cargo reads: not target/, not the Nix files (editing them must not
  # rebuild mur). e2e/ is a workspace member, so its manifest must be there.
  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../Cargo.toml
      ../Cargo.lock
      ../build.rs
      ../link
      ../src
      ../tests
      ../docs
      ../e2e
    ];
  };

  # Every crate is fetched by its checksum in the committed lock; no other hash.
  cargoLock.lockFile = ../Cargo.lock;

  # Only the mur package (the e2e harness needs Docker).
  cargoBuildFlags = [
    "--package"
    "mur"
  ];
  cargoTestFlags = [
    "--package"
    "mur"
  ];

  env.CARGO_INCREMENTAL = "0";

  meta = {
    description = cargoToml.package.description;
    homepage = cargoToml.package.repository;
    license = lib.licenses.asl20;
    mainProgram = "mur";
    platforms = lib.platforms.linux;
  };
}
