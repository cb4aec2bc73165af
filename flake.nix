{
  description = "mur (murmur): packs, installs and runs capsules, and launches formations of them";

  # nixpkgs only, so there is one input to lock. flake.lock pins a nixos-unstable
  # revision; `nix flake update` moves it.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      lib = nixpkgs.lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAll = f: lib.genAttrs systems (system: f system nixpkgs.legacyPackages.${system});
    in
    {
      packages = forAll (
        system: pkgs: {
          # Built from Cargo.lock; its checkPhase runs `cargo test`.
          default = pkgs.callPackage ./nix/package.nix { };
          # A static musl binary, like the release archives.
          static = pkgs.pkgsStatic.callPackage ./nix/package.nix { };
        }
      );

      # `nix run` (and `nix run github:murmur-dev/mur -- --help`).
      apps = forAll (
        system: pkgs: {
          default = {
            type = "app";
            program = lib.getExe self.packages.${system}.default;
          };
        }
      );

      checks = forAll (
        system: pkgs:
        let
          mur = self.packages.${system}.default;
          # The package's vendored crates and cargo setup, with another command in
          # place of build and install.
          cargoCheck =
            name: tools: command:
            mur.overrideAttrs (old: {
              pname = "mur-${name}";
              nativeBuildInputs = old.nativeBuildInputs ++ tools;
              doCheck = false;
              buildPhase = ''
                runHook preBuild
                ${command}
                runHook postBuild
              '';
              installPhase = "touch $out";
            });
        in
        {
          # Build, then `cargo test` (buildRustPackage's checkPhase).
          tests = mur;
          clippy = cargoCheck "clippy" [ pkgs.clippy ] "cargo clippy --offline --locked --all-targets -- -D warnings";
          fmt = cargoCheck "fmt" [ pkgs.rustfmt ] "cargo fmt --all --check";
        }
      );

      devShells = forAll (
        system: pkgs: {
          default = pkgs.mkShell {
            inputsFrom = [ self.packages.${system}.default ];
            packages = [
              pkgs.clippy
              pkgs.rustfmt
              pkgs.rust-analyzer
              pkgs.cargo-nextest
              pkgs.just
            ];
            CARGO_INCREMENTAL = "0";
          };
        }
      );
    };
}
