# A stand-in for nixpkgs, for checking ../../flake.nix's outputs with no network:
#   nix flake check --no-build --override-input nixpkgs path:./nix/stub-nixpkgs
# (scripts/nix-check.sh). It has only what mur's Nix files use, with the same
# argument names; each builder returns a real but unbuildable derivation, so the
# check sees the shapes of packages, apps, checks and devShells. It does not
# check that nixpkgs' functions behave as used: only a real `nix build` does.
{
  outputs =
    { self }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      genAttrs =
        names: f:
        builtins.listToAttrs (
          map (name: {
            inherit name;
            value = f name;
          }) names
        );

      lib = {
        inherit genAttrs;
        importTOML = path: builtins.fromTOML (builtins.readFile path);
        getExe = drv: "${drv}/bin/${drv.meta.mainProgram}";
        # Like lib.fileset, a missing file is an error.
        fileset = {
          unions =
            paths:
            map (p: if builtins.pathExists p then p else throw "lib.fileset: ${toString p} does not exist") paths;
          toSource = { root, fileset }: builtins.deepSeq fileset root;
        };
        licenses.asl20 = {
          spdxId = "Apache-2.0";
        };
        platforms.linux = systems;
      };

      forSystem =
        system:
        let
          # A derivation that is only instantiated, never built.
          stubDrv =
            attrs:
            let
              drv = derivation {
                name = "${attrs.pname or attrs.name}-${attrs.version or "stub"}";
                inherit system;
                builder = "/bin/sh";
                args = [
                  "-c"
                  "exit 1"
                ];
              };
            in
            drv
            // {
              meta = attrs.meta or { };
              passthru = attrs.passthru or { };
              nativeBuildInputs = attrs.nativeBuildInputs or [ ];
              overrideAttrs = f: stubDrv (attrs // f attrs);
            };
          tool = name: stubDrv { inherit name; };
          pkgs = {
            inherit lib system;
            callPackage =
              fn: args:
              let
                f = if builtins.isFunction fn then fn else import fn;
              in
              f (builtins.intersectAttrs (builtins.functionArgs f) pkgs // args);
            rustPlatform.buildRustPackage =
              attrs:
              # Forcing src runs the fileset checks above.
              assert builtins.isPath attrs.src;
              assert builtins.isString attrs.pname && builtins.isString attrs.version;
              assert builtins.pathExists attrs.cargoLock.lockFile;
              stubDrv attrs;
            mkShell = attrs: stubDrv ({ name = "shell"; } // attrs);
            pkgsStatic = pkgs;
            clippy = tool "clippy";
            rustfmt = tool "rustfmt";
            rust-analyzer = tool "rust-analyzer";
            cargo-nextest = tool "cargo-nextest";
            just = tool "just";
          };
        in
        pkgs;
    in
    {
      inherit lib;
      legacyPackages = genAttrs systems forSystem;
    };
}
