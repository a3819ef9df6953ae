! A DFT code's input, read as pw.x reads it (-i file): the I/O rank opens the input file and reads each namelist,
! and after each read every rank calls a check (check_namelist_read) that broadcasts the read's status and the line
! at fault.  The line is read only when the namelist read failed; on good input the CHARACTER(512) local is
! broadcast as gfortran's namelist reader left the stack there, through an integer array allocated for the
! broadcast (as the code's mp_bcast of a string does).  Natively harmless: the other ranks look at the line only
! when the status says the read failed.

program namelist_input
  use mpi
  implicit none
  integer :: ierr, rank, ios, nat, ntyp, nbnd, step
  double precision :: ecutwfc, degauss, energy
  character(len=16) :: calculation, occupations
  character(len=256) :: input
  double precision, external :: band_energy
  namelist /control/ calculation
  namelist /system/ nat, ntyp, ecutwfc, nbnd, occupations, degauss
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  calculation = 'scf'
  nat = 1
  ntyp = 1
  nbnd = 8
  ecutwfc = 20
  degauss = 0
  occupations = 'fixed'
  call get_command_argument(1, input)
  ios = 0
  if (rank == 0) then
    open(unit=5, file=trim(input), status='old', action='read')
    read(5, nml=control, iostat=ios)
  end if
  call check_namelist_read(ios, 5, 'control')
  if (rank == 0) read(5, nml=system, iostat=ios)
  call check_namelist_read(ios, 5, 'system')
  if (rank == 0) close(5)
  call MPI_Bcast(nat, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(nbnd, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(ecutwfc, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  energy = 0
  do step = 1, 3
    energy = energy + band_energy(nat, nbnd, ecutwfc * step)
  end do
  print '(A,I0,A,I0,A,I0,A,F14.4)', 'r', rank, ': nat ', nat, ' nbnd ', nbnd, ' energy ', energy
  call MPI_Finalize(ierr)
end program

subroutine check_namelist_read(ios, unit, name)
  use mpi
  implicit none
  integer, intent(in) :: ios, unit
  character(len=*), intent(in) :: name
  character(len=512) :: line
  integer :: rank, status, ierr
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  status = ios
  if (rank == 0 .and. ios /= 0) then
    backspace(unit)
    read(unit, '(A512)') line
  end if
  call MPI_Bcast(status, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call bcast_string(line)
  if (status /= 0) then
    if (rank == 0) print '(A,A,A,A)', 'bad namelist ', name, ': ', trim(line)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
end subroutine

! a string broadcast as integers, one a character
subroutine bcast_string(text)
  use mpi
  implicit none
  character(len=*), intent(inout) :: text
  integer, allocatable :: codes(:)
  integer :: i, ierr
  allocate(codes(len(text)))
  do i = 1, len(text)
    codes(i) = ichar(text(i:i))
  end do
  call MPI_Bcast(codes, len(text), MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  do i = 1, len(text)
    text(i:i) = char(codes(i))
  end do
  deallocate(codes)
end subroutine

double precision function band_energy(nat, nbnd, ecut)
  use mpi
  implicit none
  integer, intent(in) :: nat, nbnd
  double precision, intent(in) :: ecut
  double precision :: local
  integer :: ierr, rank, ib
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  local = 0
  do ib = 1, nbnd
    local = local + ecut / (ib + rank + nat)
  end do
  call MPI_Allreduce(local, band_energy, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
end function
